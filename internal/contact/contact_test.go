package contact

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromWebhook(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		waID, user, parent, un string
		want                   Identity
	}{
		{"phone and BSUID", "16315551181", "US.13491208655302741918", "", "", Identity{WaID: "16315551181", UserID: "US.13491208655302741918"}},
		{"BSUID alone, username", "", "CO.1047385771169864", "", "@Julianzlc", Identity{UserID: "CO.1047385771169864", Username: "Julianzlc"}},
		{"a BSUID in the phone field", "US.1234", "US.1234", "", "", Identity{UserID: "US.1234"}},
		{"a BSUID in the phone field alone", "US.1234", "", "", "", Identity{UserID: "US.1234"}},
		{"a plus", "+6281234567890", "", "", "", Identity{WaID: "6281234567890"}},
		{"parent", "", "US.1", "US.ENT.2", "", Identity{UserID: "US.1", ParentUserID: "US.ENT.2"}},
		{"nothing", "", "", "", "", Identity{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FromWebhook(tc.waID, tc.user, tc.parent, tc.un, "")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want, +got):\n%s", diff)
			}
		})
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   Identity
		want Address
	}{
		{"phone wins", Identity{WaID: "1555", UserID: "US.1", ParentUserID: "US.ENT.1"}, Address{To: "1555"}},
		{"parent before BSUID", Identity{UserID: "US.1", ParentUserID: "US.ENT.1"}, Address{Recipient: "US.ENT.1"}},
		{"BSUID", Identity{UserID: "US.1"}, Address{Recipient: "US.1"}},
		{"nobody", Identity{Username: "x"}, Address{}},
	}
	for _, tc := range tests {
		if got := tc.id.Address(); got != tc.want {
			t.Errorf("%s: Address() = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if !(Identity{Username: "x", Name: "y"}).IsZero() {
		t.Error("a username alone is somebody")
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s            string
		user, parent bool
	}{
		{"US.13491208655302741918", true, false},
		{"CO.1047385771169864", true, false},
		{"US.ENT.11815799212886844830", false, true},
		{"us.123", false, false},
		{"US.", false, false},
		{"US.12-3", false, false},
		{"USA.123", false, false},
		{"16505551234", false, false},
	}
	for _, tc := range tests {
		if ValidUserID(tc.s) != tc.user || ValidParentUserID(tc.s) != tc.parent {
			t.Errorf("%q: user %v parent %v, want %v %v", tc.s, ValidUserID(tc.s), ValidParentUserID(tc.s), tc.user, tc.parent)
		}
	}
	if Country("US.ENT.1") != "US" || Country("16505551234") != "" {
		t.Error("Country")
	}
}

func TestMergeAndMatch(t *testing.T) {
	t.Parallel()
	a := Identity{WaID: "1555", Name: "Old"}
	b := Identity{UserID: "US.1", Name: "New", Username: "u"}
	got := a.Merge(b)
	want := Identity{WaID: "1555", UserID: "US.1", Name: "New", Username: "u"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want, +got):\n%s", diff)
	}
	if a.Matches(b) || !got.Matches(b) || !got.Matches(a) {
		t.Error("Matches")
	}
	if (Identity{Name: "x"}).Matches(Identity{Name: "x"}) {
		t.Error("a name is not an identifier")
	}
	if d := (Identity{UserID: "US.1", Username: "julian"}).Display(); d != "@julian" {
		t.Errorf("Display = %q", d)
	}
}
