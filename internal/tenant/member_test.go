package tenant

import (
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/contact"
)

// The identifiers of the people of TestMembersByUserID.
const (
	bsuidOnly   = "US.40987654321098761918" // listed by BSUID alone
	parentOnly  = "ID.ENT.99887766554433"   // listed by parent BSUID alone
	bothPhone   = "6281234567890"           // listed by phone and BSUID
	bothBSUID   = "ID.7781234567890abc"
	phoneOnly   = "16505551234" // listed by phone alone
	otherBSUID  = "US.55555555555555555555"
	otherPhone  = "6200000000000"
	otherParent = "ID.ENT.11111111111111"
)

const membersByUserID = base + `members:
  - {user_id: ` + bsuidOnly + `, role: admin, name: Sam}
  - {user_id: ` + parentOnly + `, role: member}
  - {wa_id: "` + bothPhone + `", user_id: ` + bothBSUID + `, role: owner, name: Pak Agus}
  - {wa_id: "` + phoneOnly + `", role: member, name: Sheena}
`

// TestMembersByUserID (CONTRACT.md, Wave 4): a tenant file member may be listed by user_id (a
// BSUID or a parent BSUID), by wa_id, or both; MemberOf finds the member by any identifier a
// message names, and by nothing else.
func TestMembersByUserID(t *testing.T) {
	t.Parallel()
	tn, err := Parse([]byte(membersByUserID))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if len(tn.Members) != 4 || tn.Members[0].UserID != bsuidOnly || tn.Members[0].WaID != "" ||
		tn.Members[2].WaID != bothPhone || tn.Members[2].UserID != bothBSUID {
		t.Fatalf("members = %+v", tn.Members)
	}
	if id := tn.Members[1].Identity(); id.ParentUserID != parentOnly || id.UserID != "" {
		t.Errorf("Identity of a member listed by parent BSUID = %+v, want it as the parent BSUID", id)
	}
	if id := tn.Members[0].Identity(); id.UserID != bsuidOnly || id.ParentUserID != "" || id.Name != "Sam" {
		t.Errorf("Identity of a member listed by BSUID = %+v", id)
	}
	tests := []struct {
		name     string
		who      contact.Identity
		wantName string
		wantRole Role
		found    bool
	}{
		{"BSUID alone", contact.Identity{UserID: bsuidOnly}, "Sam", RoleAdmin, true},
		{"BSUID with a phone the file does not list", contact.Identity{WaID: otherPhone, UserID: bsuidOnly}, "Sam", RoleAdmin, true},
		{"parent BSUID beside a BSUID the file does not list", contact.Identity{UserID: otherBSUID, ParentUserID: parentOnly}, "", RoleMember, true},
		{"both-listed member by BSUID alone", contact.Identity{UserID: bothBSUID}, "Pak Agus", RoleOwner, true},
		{"both-listed member by phone alone", contact.Identity{WaID: bothPhone}, "Pak Agus", RoleOwner, true},
		{"both-listed member by phone and BSUID", contact.Identity{WaID: bothPhone, UserID: bothBSUID}, "Pak Agus", RoleOwner, true},
		{"phone-listed member by phone", contact.Identity{WaID: phoneOnly, UserID: otherBSUID}, "Sheena", RoleMember, true},
		{"phone-listed member by BSUID alone is a stranger", contact.Identity{UserID: otherBSUID}, "", "", false},
		{"unknown phone", contact.Identity{WaID: otherPhone}, "", "", false},
		{"unknown parent", contact.Identity{ParentUserID: otherParent}, "", "", false},
		{"a BSUID is no parent BSUID", contact.Identity{ParentUserID: bsuidOnly}, "", "", false},
		{"a name is no identifier", contact.Identity{Name: "Sam", Username: "sam"}, "", "", false},
		{"nobody", contact.Identity{}, "", "", false},
	}
	for _, tc := range tests {
		m, ok := tn.MemberOf(tc.who)
		if ok != tc.found || m.Name != tc.wantName || m.Role != tc.wantRole {
			t.Errorf("%s: MemberOf = %+v, %v; want %q (%s), found %v", tc.name, m, ok, tc.wantName, tc.wantRole, tc.found)
		}
	}
}

// TestMemberLabelHidesTheUserID: a member listed by BSUID alone is shown by country and last four
// characters, never by its id, in labels and in apply's diff.
func TestMemberLabelHidesTheUserID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    Member
		want string
	}{
		{Member{UserID: bsuidOnly, Name: "Sam"}, "Sam (US…1918)"},
		{Member{UserID: bsuidOnly}, "US…1918"},
		{Member{UserID: parentOnly}, "ID…4433"},
		{Member{WaID: bothPhone, UserID: bothBSUID, Name: "Pak Agus"}, "Pak Agus (…7890)"},
	}
	for _, tt := range tests {
		got := MemberLabel(tt.m)
		if got != tt.want {
			t.Errorf("MemberLabel(%+v) = %q, want %q", tt.m, got, tt.want)
		}
		// The id, and its part after the country and any "ENT.".
		body := tt.m.UserID[strings.LastIndex(tt.m.UserID, ".")+1:]
		for _, id := range []string{tt.m.UserID, tt.m.WaID, body} {
			if id != "" && strings.Contains(got, id) {
				t.Errorf("MemberLabel(%+v) = %q shows %s", tt.m, got, id)
			}
		}
	}

	prev, err := Parse([]byte(membersByUserID))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(membersByUserID))
	if err != nil {
		t.Fatal(err)
	}
	next.Members[0].Role = RoleOwner
	next.Members = append(next.Members[:1], next.Members[2:]...)
	next.Members = append(next.Members, Member{UserID: otherBSUID, Role: RoleMember})
	var all []string
	for _, ch := range [][]Change{Diff(prev, next), Diff(nil, next), Diff(next, prev)} {
		all = append(all, lines(ch)...)
	}
	out := strings.Join(all, "\n")
	if out == "" {
		t.Fatal("no diff")
	}
	for _, id := range []string{bsuidOnly, parentOnly, bothBSUID, bothPhone, otherBSUID, "40987654321098761918", "99887766554433"} {
		if strings.Contains(out, id) {
			t.Errorf("diff shows %s:\n%s", id, out)
		}
	}
}

// TestProblemsNeverEchoAUserID: a bad or duplicate user_id is named by its path, never shown.
func TestProblemsNeverEchoAUserID(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(base + "members:\n  - {user_id: " + bsuidOnly + "}\n  - {user_id: " + bsuidOnly + "}\n  - {user_id: \"us.lowercase123\"}\n"))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	for _, id := range []string{bsuidOnly, "lowercase123"} {
		if strings.Contains(err.Error(), id) {
			t.Errorf("error shows %s:\n%v", id, err)
		}
	}
	if !strings.Contains(err.Error(), "members[1].user_id: same person as members[0]") || !strings.Contains(err.Error(), "members[2].user_id: must be") {
		t.Errorf("err = %v, want the duplicate and the malformed user_id named", err)
	}
}
