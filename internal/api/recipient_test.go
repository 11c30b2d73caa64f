package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// A person Meta shares no phone for writes by business-scoped user id (BSUID) alone
// (shared/meta/usernames.md); /v1/messages reaches them with "recipient" (CONTRACT.md, Contacts
// and identities).
const userID = "US.13491208655302741918"

// byRecipient is a send body addressed by recipient alone.
func byRecipient(recipient, rest string) string {
	return `{"recipient":"` + recipient + `",` + rest + `}`
}

const textPart = `"type":"text","text":{"body":"Your bus leaves at 9"}`

// statusByUserID is a status webhook of the send wamid (callback key key) to the person
// recipient reached by BSUID, as Meta sends it since BSUIDs: recipient_user_id and no
// recipient_id, the contact beside the statuses (none on a failure).
func statusByUserID(wamid, key, recipient, status string) []byte {
	contacts := fmt.Sprintf(`,"contacts":[{"profile":{"name":"Bo Rivera","username":"@bo_rivera"},"user_id":%q}]`, recipient)
	if status == "failed" {
		contacts = ""
	}
	return []byte(fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"300000000000001","changes":[{"value":{
"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":%q},
"statuses":[{"id":%q,"status":%q,"timestamp":"%d","recipient_user_id":%q,"biz_opaque_callback_data":%q,
"conversation":{"id":"0b6f3e1a9c2d4e5f8a7b6c5d4e3f2a1b","origin":{"type":"service"}}}]%s},"field":"messages"}]}]}`,
		number, wamid, status, time.Now().Unix(), recipient, key, contacts))
}

// record is the send record of the api message id.
func (s *stack) record(id string) store.OutboundRecord {
	s.t.Helper()
	rec, err := store.NewSends(s.db, store.Options{}).GetSend(context.Background(), tasks.SendKey(id))
	if err != nil {
		s.t.Fatalf("the record of %s: %v", id, err)
	}
	return rec
}

// errorMessage is an error answer's message.
func (a answer) errorMessage() string {
	e, _ := a.Body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// TestSendByRecipientInsideTheWindow: a person who wrote by BSUID alone opened their 24-hour
// window; a text to them by recipient and no to is accepted (202), stored with Recipient and no
// To, sent to Graph with "recipient" and no "to", and its statuses, which name the person by
// recipient_user_id alone, show on GET /v1/messages/{id}. No log line carries the BSUID.
func TestSendByRecipientInsideTheWindow(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	c := s.openWindowOf(wacontact.Identity{UserID: userID}, time.Now().Add(-time.Hour))
	convID, _, err := store.NewConversationStore(s.db, store.Options{}).ConversationOf(context.Background(), "acme", number,
		wacontact.Identity{UserID: userID})
	if err != nil {
		t.Fatal(err)
	}
	a := s.post(s.key, "by-bsuid-1", byRecipient(userID, textPart))
	id, _ := a.Body["id"].(string)
	if a.Status != http.StatusAccepted || a.Body["status"] != "queued" || id == "" {
		t.Fatalf("POST by recipient inside the window: %d %v, want 202 queued", a.Status, a.Body)
	}
	if rec := s.record(id); rec.Recipient != userID || rec.To != "" || rec.ConversationID != convID || strings.Contains(rec.Message, userID) {
		t.Errorf("record recipient %q to %q conversation %q (contact %s's is %s): want by recipient alone, in the contact's conversation",
			rec.Recipient, rec.To, rec.ConversationID, c.ID, convID)
	}
	got := s.waitStatus(id, "sent")
	wamid, _ := got.Body["graph_message_id"].(string)
	key := tasks.SendKey(id)
	sends := s.sendsWithKey(key)
	if len(sends) != 1 || sends[0].MessageID != wamid {
		t.Fatalf("sends %+v, want one, wamid %s", sends, wamid)
	}
	if _, hasTo := sends[0].Body["to"]; hasTo || sends[0].Body["recipient"] != userID || sends[0].Recipient != userID {
		t.Errorf("Graph received %v, want recipient %s and no to", sends[0].Body, userID)
	}
	if again := s.post(s.key, "by-bsuid-1", byRecipient(userID, textPart)); again.Status != http.StatusAccepted || again.Body["id"] != id {
		t.Errorf("replay by recipient: %d %v, want the same message", again.Status, again.Body)
	}

	s.deliver(statusByUserID(wamid, key, userID, "delivered"))
	s.waitStatus(id, "delivered")
	s.deliver(statusByUserID(wamid, key, userID, "read"))
	s.waitStatus(id, "read")
	if n := len(s.sendsWithKey(key)); n != 1 {
		t.Errorf("%d Graph sends, want 1", n)
	}
	if strings.Contains(s.logs.String(), userID) {
		t.Error("a log line carries the BSUID")
	}
}

// TestSendWithToAndRecipientGoesToTo: with both to and recipient the message goes to to, as
// Meta sends it: the window is the phone's, the record keeps both, Graph gets the phone.
func TestSendWithToAndRecipientGoesToTo(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	a := s.post(s.key, "", `{"to":"`+contact+`","recipient":"`+userID+`",`+textPart+`}`)
	id, _ := a.Body["id"].(string)
	if a.Status != http.StatusAccepted || id == "" {
		t.Fatalf("POST with to and recipient: %d %v, want 202", a.Status, a.Body)
	}
	if rec := s.record(id); rec.To != contact || rec.Recipient != userID {
		t.Errorf("record to %q recipient %q, want both", rec.To, rec.Recipient)
	}
	s.waitStatus(id, "sent")
	sends := s.sendsWithKey(tasks.SendKey(id))
	if len(sends) != 1 || sends[0].Body["to"] != contact {
		t.Fatalf("Graph received %+v, want one send to the phone", sends)
	}
	if _, hasRecipient := sends[0].Body["recipient"]; hasRecipient {
		t.Errorf("Graph received %v: the phone wins, no recipient beside it", sends[0].Body)
	}
}

// TestMalformedRecipientRefused: a recipient that is not a BSUID or a parent BSUID in the form
// usernames.md gives is a 400 invalid_request naming the field, with or without to; nothing is
// stored or sent.
func TestMalformedRecipientRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	for _, bad := range []string{"us.123", "16505551234", "US.", "US.ENT.", "USA.123", "US.12-34", "US.ENT.ab.cd", " US.123", "@bo_rivera"} {
		for _, body := range []string{byRecipient(bad, textPart), `{"to":"` + contact + `","recipient":"` + bad + `",` + textPart + `}`} {
			a := s.post(s.key, "", body)
			if a.Status != http.StatusBadRequest || a.errorCode() != "invalid_request" || !strings.HasPrefix(a.errorMessage(), "recipient:") {
				t.Errorf("recipient %q in %s: %d %v, want 400 invalid_request naming recipient", bad, body, a.Status, a.Body)
			}
		}
	}
	// The forms usernames.md gives are taken.
	s.openWindowOf(wacontact.Identity{UserID: "US.a1"}, time.Now().Add(-time.Hour))
	s.openWindowOf(wacontact.Identity{ParentUserID: "US.ENT.b2"}, time.Now().Add(-time.Hour))
	for _, good := range []string{"US.a1", "US.ENT.b2"} {
		if a := s.post(s.key, "", byRecipient(good, textPart)); a.Status != http.StatusAccepted {
			t.Errorf("recipient %q: %d %v, want 202", good, a.Status, a.Body)
		}
	}
	if n := len(s.Graph.Sends()); n > 2 {
		t.Errorf("%d Graph sends, want at most the two accepted", n)
	}
}

// TestAuthenticationTemplateNeedsAPhone: an authentication template (wapipe recorded its
// category) addressed by recipient alone is refused with 422 phone_number_required before any
// call to Graph (Meta would refuse it with 131062); with to, or to and recipient, it goes. A
// template of another category goes by recipient. One wapipe has no category for goes, and
// Meta's 131062 fails it for good.
func TestAuthenticationTemplateNeedsAPhone(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	prefs := store.NewContactPrefs(s.db, store.Options{})
	for name, category := range map[string]string{"login_code": "AUTHENTICATION", "ticket_update": "UTILITY", "otp_unrecorded": "AUTHENTICATION"} {
		s.Graph.AddTemplate(name)
		s.Graph.PutTemplate(graphfake.Template{WABAID: "300000000000001", Name: name, Language: "en_US", Status: "APPROVED", Category: category})
		if name == "otp_unrecorded" {
			continue // Meta knows it, wapipe has not heard of it
		}
		if err := prefs.RecordTemplate(ctx, store.Template{TenantID: "acme", Name: name, Language: "en_US", Status: "APPROVED", Category: category}); err != nil {
			t.Fatal(err)
		}
	}
	template := func(name string) string {
		return `"type":"template","template":{"name":"` + name + `","language":{"code":"en_US"},"components":[` +
			`{"type":"body","parameters":[{"type":"text","text":"123456"}]},` +
			`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"text","text":"123456"}]}]}`
	}
	a := s.post(s.key, "otp-1", byRecipient(userID, template("login_code")))
	if a.Status != http.StatusUnprocessableEntity || a.errorCode() != "phone_number_required" {
		t.Fatalf("authentication template by recipient: %d %v, want 422 phone_number_required", a.Status, a.Body)
	}
	if a := s.post(s.key, "", byRecipient("US.ENT.abc123", template("login_code"))); a.errorCode() != "phone_number_required" {
		t.Errorf("authentication template by parent BSUID: %d %v, want 422 phone_number_required", a.Status, a.Body)
	}
	for _, body := range []string{
		`{"to":"` + contact + `",` + template("login_code") + `}`,
		`{"to":"` + contact + `","recipient":"` + userID + `",` + template("login_code") + `}`,
		byRecipient(userID, template("ticket_update")),
	} {
		a := s.post(s.key, "", body)
		if a.Status != http.StatusAccepted {
			t.Errorf("%s: %d %v, want 202", body, a.Status, a.Body)
			continue
		}
		s.waitStatus(a.Body["id"].(string), "sent")
	}
	for _, send := range templateSends(s, "login_code") {
		if send["to"] != contact {
			t.Errorf("Graph received the authentication template %v, want it only to the phone", send)
		}
	}
	if n := len(templateSends(s, "login_code")); n != 2 {
		t.Errorf("Graph received the authentication template %d times, want 2 (the two with to)", n)
	}
	if n := len(s.sendsWithKey(tasks.SendKey("otp-1"))); n != 0 {
		t.Errorf("the refused template reached Graph %d times", n)
	}
	for _, r := range s.Graph.Requests() {
		if r.Recipient != "" && strings.Contains(string(r.RawBody), "login_code") {
			t.Errorf("Graph was called with the authentication template by recipient: %s %s", r.Method, r.Path)
		}
	}
	// Unknown to wapipe: it goes, and Meta's 131062 fails it for good.
	u := s.post(s.key, "", byRecipient(userID, template("otp_unrecorded")))
	if u.Status != http.StatusAccepted {
		t.Fatalf("uncategorised template by recipient: %d %v, want 202", u.Status, u.Body)
	}
	got := s.waitStatus(u.Body["id"].(string), "failed")
	if e, _ := got.Body["error"].(map[string]any); e["code"] != float64(131062) {
		t.Errorf("uncategorised authentication template by recipient: %v, want failed with 131062", got.Body)
	}
	if n := len(templateSends(s, "otp_unrecorded")); n != 0 {
		t.Errorf("Graph accepted the uncategorised authentication template %d times", n)
	}
}

// TestFreeFormByRecipientOutsideTheWindow: a text by recipient to a person who never wrote, or
// wrote more than 24 hours ago, is refused with 422 outside_customer_service_window; a template
// goes.
func TestFreeFormByRecipientOutsideTheWindow(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	if a := s.post(s.key, "", byRecipient(userID, textPart)); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "outside_customer_service_window" {
		t.Fatalf("text by recipient to a person who never wrote: %d %v, want 422", a.Status, a.Body)
	}
	// A window opened by the phone is not this BSUID's: the tenant does not know they are one.
	s.openWindow(contact, time.Now().Add(-time.Hour))
	if a := s.post(s.key, "", byRecipient(userID, textPart)); a.errorCode() != "outside_customer_service_window" {
		t.Errorf("text by a BSUID the tenant never met, while a phone's window is open: %d %v, want 422", a.Status, a.Body)
	}
	s.openWindowOf(wacontact.Identity{UserID: userID}, time.Now().Add(-25*time.Hour))
	if a := s.post(s.key, "", byRecipient(userID, textPart)); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "outside_customer_service_window" {
		t.Errorf("text by recipient 25 h after the last message: %d %v, want 422", a.Status, a.Body)
	}
	a := s.post(s.key, "", byRecipient(userID, `"type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}`))
	if a.Status != http.StatusAccepted {
		t.Fatalf("template by recipient outside the window: %d %v, want 202", a.Status, a.Body)
	}
	s.waitStatus(a.Body["id"].(string), "sent")
}

// TestOptOutFoundByEitherIdentifier: a contact who stopped marketing messages is found by phone
// or by BSUID: a MARKETING template to them is refused (422 contact_opted_out) whichever the send
// names them by, and nothing reaches Graph; a UTILITY template still goes by recipient. A person
// known by BSUID alone who stopped is refused by recipient too.
func TestOptOutFoundByEitherIdentifier(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	prefs := store.NewContactPrefs(s.db, store.Options{})
	s.Graph.AddTemplate("spring_sale")
	s.Graph.AddTemplate("ticket_update")
	for name, category := range map[string]string{"spring_sale": "MARKETING", "ticket_update": "UTILITY"} {
		if err := prefs.RecordTemplate(ctx, store.Template{TenantID: "acme", Name: name, Language: "en_US", Status: "APPROVED", Category: category}); err != nil {
			t.Fatal(err)
		}
	}
	template := func(name string) string {
		return `"type":"template","template":{"name":"` + name + `","language":{"code":"en_US"}}`
	}
	// The person wrote once with both identifiers (the phone an alias of the BSUID), then stopped.
	both := s.openWindowOf(wacontact.Identity{WaID: contact, UserID: userID}, time.Now().Add(-time.Hour))
	if _, err := prefs.SetMarketing(ctx, "acme", both, true, time.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	// Another wrote by BSUID alone, then stopped.
	const onlyBSUID = "ID.40981237650012"
	alone := s.openWindowOf(wacontact.Identity{UserID: onlyBSUID}, time.Now().Add(-time.Hour))
	if _, err := prefs.SetMarketing(ctx, "acme", alone, true, time.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"by recipient":            byRecipient(userID, template("spring_sale")),
		"by to":                   `{"to":"` + contact + `",` + template("spring_sale") + `}`,
		"by to and recipient":     `{"to":"` + contact + `","recipient":"` + userID + `",` + template("spring_sale") + `}`,
		"known by BSUID alone":    byRecipient(onlyBSUID, template("spring_sale")),
		"to unknown, by BSUID of": `{"to":"33699999999","recipient":"` + onlyBSUID + `",` + template("spring_sale") + `}`,
	} {
		if a := s.post(s.key, "", body); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "contact_opted_out" {
			t.Errorf("MARKETING template %s: %d %v, want 422 contact_opted_out", name, a.Status, a.Body)
		}
	}
	u := s.post(s.key, "", byRecipient(userID, template("ticket_update")))
	if u.Status != http.StatusAccepted {
		t.Fatalf("UTILITY template by recipient to a stopped contact: %d %v, want 202", u.Status, u.Body)
	}
	testenv.Eventually(t, 30*time.Second, func() bool { return len(templateSends(s, "ticket_update")) == 1 },
		"the UTILITY template never reached Graph")
	if n := len(templateSends(s, "spring_sale")); n != 0 {
		t.Errorf("Graph received the refused template %d times", n)
	}
}
