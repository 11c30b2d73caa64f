package tenant

import (
	"testing"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
)

func TestLookups(t *testing.T) {
	t.Parallel()
	tn := mustParseFile(t, "../../tenants/sample.yaml")

	if m, ok := tn.MemberOf(contact.Identity{WaID: "6281234567890"}); !ok || m.Name != "Pak Agus" || m.Role != RoleAdmin {
		t.Errorf("Member(Pak Agus) = %+v, %v", m, ok)
	}
	if _, ok := tn.MemberOf(contact.Identity{WaID: "6200000000000"}); ok {
		t.Error("Member(unknown) found")
	}
	for id, want := range map[string]bool{"106540352242922": true, "106540352242923": true, "1": false, "": false} {
		if got := tn.OwnsNumber(id); got != want {
			t.Errorf("OwnsNumber(%q) = %v", id, got)
		}
	}
	if in, ok := tn.Intent("create_booking"); !ok || !in.Confirm {
		t.Errorf("Intent(create_booking) = %+v, %v", in, ok)
	}
	for _, name := range []string{GeneralQuery, "nope", ""} {
		if _, ok := tn.Intent(name); ok {
			t.Errorf("Intent(%q) found", name)
		}
	}
}

func TestEffectiveLanguage(t *testing.T) {
	t.Parallel()
	tn := mustParseFile(t, "../../tenants/sample.yaml")             // language en
	agus, _ := tn.MemberOf(contact.Identity{WaID: "6281234567890"}) // language id
	sheena, _ := tn.MemberOf(contact.Identity{WaID: "16505551234"}) // no language
	tests := []struct {
		name string
		m    Member
		want string
	}{
		{"member's own", agus, "id"},
		{"member without one", sheena, "en"},
		{"non-member", Member{}, "en"},
	}
	for _, tt := range tests {
		if got := tn.EffectiveLanguage(tt.m); got != tt.want {
			t.Errorf("%s: EffectiveLanguage = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEffectiveAckText(t *testing.T) {
	t.Parallel()
	tn := mustParseFile(t, "testdata/minimal.yaml") // language id, no ack_text
	if got, want := tn.EffectiveAckText(), i18n.Text("id", i18n.Ack); got != want {
		t.Errorf("EffectiveAckText = %q, want %q", got, want)
	}
	tn.Assistant.AckText = "Terima kasih!"
	if got := tn.EffectiveAckText(); got != "Terima kasih!" {
		t.Errorf("EffectiveAckText = %q, want the ack_text", got)
	}
}

func TestIntentAllowedFor(t *testing.T) {
	t.Parallel()
	restricted := Intent{Roles: []Role{RoleOwner, RoleAdmin}}
	open := Intent{}
	tests := []struct {
		in   Intent
		role Role
		want bool
	}{
		{restricted, RoleOwner, true},
		{restricted, RoleAdmin, true},
		{restricted, RoleMember, false},
		{restricted, "", false}, // a non-member
		{open, RoleMember, true},
		{open, "", true},
	}
	for _, tt := range tests {
		if got := tt.in.AllowedFor(tt.role); got != tt.want {
			t.Errorf("%v.AllowedFor(%q) = %v", tt.in.Roles, tt.role, got)
		}
	}
}

func TestMonthlyLLMCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q           Quota
		wantLimit   int
		wantLimited bool
	}{
		{Quota{}, 0, false},
		{Quota{LLMCallsPerMonth: ptr(0)}, 0, true},
		{Quota{LLMCallsPerMonth: ptr(1000)}, 1000, true},
	}
	for _, tt := range tests {
		limit, limited := tt.q.MonthlyLLMCalls()
		if limit != tt.wantLimit || limited != tt.wantLimited {
			t.Errorf("%s: MonthlyLLMCalls = %d, %v", fmtQuota(tt.q), limit, limited)
		}
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	f := Fields{{Name: "client", Type: FieldString}, {Name: "date", Type: FieldDate}}
	if got := f.String(); got != "{client: string, date: date}" {
		t.Errorf("String = %q", got)
	}
	if x, ok := f.Lookup("date"); !ok || x.Type != FieldDate {
		t.Errorf("Lookup(date) = %+v, %v", x, ok)
	}
	if _, ok := f.Lookup("bus"); ok {
		t.Error("Lookup(bus) found")
	}
}
