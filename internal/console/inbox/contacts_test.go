package inbox

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
)

// Julián writes with a username and never shared his phone: a BSUID and, his business being
// enrolled, a parent BSUID (as in the console's tests of people).
const (
	julianBSUID  = "CO.1047385771169864"
	julianParent = "CO.ENT.11815799212886844830"
)

// TestPersonLabels: how a contact is shown, from what is known of them.
func TestPersonLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   contact.Identity
		want person
	}{
		{contact.Identity{WaID: "6281234567890", Name: "Pak Agus"}, person{Name: "Pak Agus", Phone: "…7890", Label: "Pak Agus (…7890)", Heading: "Pak Agus"}},
		{contact.Identity{WaID: "6281234567890"}, person{Phone: "…7890", Label: "…7890", Heading: "…7890"}},
		{contact.Identity{UserID: julianBSUID, Username: "julianzlc"}, person{Username: "@julianzlc", NoPhone: true, Label: "@julianzlc", Heading: "@julianzlc"}},
		{contact.Identity{ParentUserID: julianParent}, person{NoPhone: true, Label: unnamed, Heading: unnamed}},
		{contact.Identity{UserID: julianBSUID, WaID: "6281234567890", Name: "J", Username: "j"},
			person{Name: "J", Username: "@j", Phone: "…7890", Label: "J @j (…7890)", Heading: "J"}},
		{contact.Identity{}, person{Label: unnamed, Heading: unnamed}},
	} {
		if diff := cmp.Diff(tc.want, personOf(tc.id), cmp.AllowUnexported(person{})); diff != "" {
			t.Errorf("%+v (-want, +got):\n%s", tc.id, diff)
		}
	}
}

// TestContactInfoRequestIsMetasBody: the request for a phone number is Meta's
// request_contact_info interactive message, whose button WhatsApp labels and owns.
func TestContactInfoRequestIsMetasBody(t *testing.T) {
	t.Parallel()
	m, err := contactInfoRequest(DefaultPhoneRequest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(DefaultPhoneRequest)
	want := `{"messaging_product":"","type":"interactive","interactive":{"type":"request_contact_info","body":{"text":` + string(text) +
		`},"action":{"name":"request_contact_info"}}}`
	if string(got) != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}
