package whatsapp

import (
	"testing"

	"github.com/wapipe/wapipe/internal/contact"
)

// TestSharedPhoneOnRequest: a person known by BSUID alone who taps a request_contact_info
// button answers with their own card (origin contact_request): its number is theirs, and the
// sender's identity carries it, so the phone becomes an alias of their contact. A card shared
// otherwise (someone else's, origin other) or naming several numbers says nothing of the sender.
func TestSharedPhoneOnRequest(t *testing.T) {
	t.Parallel()
	const user = "US.13491208655302741918"
	card := func(origin string, phones ...string) []byte {
		ps := ""
		for i, p := range phones {
			if i > 0 {
				ps += ","
			}
			ps += `{"phone":"+` + p + `","wa_id":"` + p + `","type":"CELL"}`
		}
		return message(`{"from_user_id":"` + user + `","id":"wamid.C","timestamp":"1784542800","type":"contacts","contacts":[{"origin":"` +
			origin + `","name":{"formatted_name":"Julian"},"phones":[` + ps + `]}]}`)
	}
	tests := []struct {
		name string
		body []byte
		want contact.Identity
	}{
		{"their own card, on request", card("contact_request", "16505551234"), contact.Identity{WaID: "16505551234", UserID: user}},
		{"a card shared otherwise", card("other", "16505551234"), contact.Identity{UserID: user}},
		{"several numbers to choose from", card("contact_request", "16505551234", "16505559999"), contact.Identity{UserID: user}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			msgs, _ := Normalize(p)
			if len(msgs) != 1 {
				t.Fatalf("%d messages", len(msgs))
			}
			if got := msgs[0].Identity(); got != tc.want {
				t.Errorf("Identity() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
