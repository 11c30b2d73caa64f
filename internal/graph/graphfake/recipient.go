package graphfake

import (
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
)

// Who a send goes to (recipient.go), as Meta takes it since users may hide their phone number
// (shared/meta/usernames.md, "Sending"): "to" is a phone number, "recipient" a business-scoped
// user id (BSUID) or parent BSUID, either or both; with both the message goes to "to". The fake
// refuses like Meta (HTTP 400, code 100) a send with neither, with an empty one, with something
// other than a phone number in "to" (a BSUID, a username) and with something other than a BSUID
// in "recipient"; and it answers 131062 to an authentication template sent by "recipient"
// alone, when it holds the template (PutTemplate, or created through the API) with category
// AUTHENTICATION: every such template has a one-tap, zero-tap or copy-code button, which Meta
// sends only to a phone number.
//
// The fake does not check a phone number's length: tests send short made-up numbers, and Meta's
// answer to a number nobody has is a failed status, not a refused send.

// address is who a send names: To when "to" was given, Recipient when "recipient" was.
type address struct{ To, Recipient string }

// sendAddress reads and checks who the send body names, with Meta's refusal when it names
// nobody or names them wrongly.
func sendAddress(body map[string]any) (address, Failure, bool) {
	var a address
	rawTo, hasTo := body["to"]
	rawRecipient, hasRecipient := body["recipient"]
	a.To, _ = rawTo.(string)
	a.Recipient, _ = rawRecipient.(string)
	invalid := func(details string) (address, Failure, bool) {
		return a, Failure{Code: 100, Message: "(#100) Invalid parameter", Details: details}.withDefaults(), true
	}
	switch {
	case !hasTo && !hasRecipient:
		return a, Failure{Code: 100, Message: "(#100) The parameter to or recipient is required."}.withDefaults(), true
	case hasTo && a.To == "":
		// An empty "to" is no way to send by recipient: the field is left out instead.
		return invalid("to: must be a non-empty phone number; leave it out to send by recipient")
	case hasTo && !phoneLike(a.To):
		return invalid("to: must be a phone number; a business-scoped user id goes in recipient")
	case hasRecipient && !contact.ValidUserID(a.Recipient) && !contact.ValidParentUserID(a.Recipient):
		return invalid("recipient: must be a business-scoped user id or parent business-scoped user id")
	}
	return a, Failure{}, false
}

// phoneLike reports whether s is written as a phone number: digits, perhaps after a "+", with
// the separators people write ("+1 (650) 555-1234"). A BSUID ("US.1349…") or a username is
// not.
func phoneLike(s string) bool {
	s = strings.TrimPrefix(strings.NewReplacer(" ", "", "-", "", "(", "", ")", "", ".", "").Replace(s), "+")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// windowKey is how the fake keys a person's customer service window: a phone number by its
// digits, a BSUID as it is (case-sensitive).
func windowKey(id string) string {
	if phoneLike(id) {
		return waID(id)
	}
	return id
}

// key is the window key of the person the send goes to: the phone when given (Meta lets "to"
// win), else the BSUID.
func (a address) key() string {
	if a.To != "" {
		return windowKey(a.To)
	}
	return a.Recipient
}

// contacts is the send answer's contacts[]: wa_id for a send to a phone number, user_id for a
// send by BSUID alone.
func (a address) contacts() []any {
	if a.To != "" {
		return []any{map[string]any{"input": a.To, "wa_id": waID(a.To)}}
	}
	return []any{map[string]any{"input": a.Recipient, "user_id": a.Recipient}}
}

// errUserIDNotAllowed is Meta's 131062: an authentication template with an OTP button sent by
// BSUID.
var errUserIDNotAllowed = Failure{HTTPStatus: http.StatusBadRequest, Code: 131062,
	Message: "(#131062) Business-scoped user id not allowed for this message",
	Details: "Authentication templates with one-tap, zero-tap or copy-code buttons cannot be sent to a business-scoped user id; send to the phone number."}

// userIDRule is Meta's refusal of a send by BSUID alone that must go to a phone number: an
// authentication template the fake holds.
func (f *Fake) userIDRule(a address, body map[string]any) (Failure, bool) {
	if a.To != "" || body["type"] != "template" {
		return Failure{}, false
	}
	tpl, _ := body["template"].(map[string]any)
	name, _ := tpl["name"].(string)
	lang, _ := tpl["language"].(map[string]any)
	code, _ := lang["code"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.templatesLocked().list {
		if t.Name == name && t.Language == code && strings.EqualFold(t.Category, graph.CategoryAuthentication) {
			return errUserIDNotAllowed.withDefaults(), true
		}
	}
	return Failure{}, false
}
