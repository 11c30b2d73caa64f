package operator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestRedactionShowsBSUIDsAsRefs: a body naming a person by business-scoped user id (a user
// with a username and no phone) shows the id, and its parent, as their keyed us_ refs, so the
// person can be followed as one with a phone is; the username and name never show.
func TestRedactionShowsBSUIDsAsRefs(t *testing.T) {
	t.Parallel()
	h := logging.DevHasher()
	const user, parent = "US.13491208655302741918", "US.ENT.506847293015824"
	body := whatsapp.SampleText(whatsapp.SampleOptions{UserID: user, ParentUserID: parent, NoPhone: true, Username: "julian",
		ContactName: "Julian", MessageID: "wamid.X"}, "hi")
	// Some senders put the BSUID in the phone fields too.
	body = []byte(strings.Replace(string(body), `"from_user_id"`, `"from":"`+user+`","from_user_id"`, 1))
	b, err := json.Marshal(RedactJSON(h, body))
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{`"from_user_id":"` + h.User(user) + `"`, `"from_parent_user_id":"` + h.User(parent) + `"`,
		`"user_id":"` + h.User(user) + `"`, `"from":"` + h.User(user) + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("redacted body lacks %s:\n%s", want, out)
		}
	}
	logcheck.Check(t, out, nil, []string{user, parent, "@julian", "Julian"})
}
