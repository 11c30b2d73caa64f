package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// The person of the username tests: a user with a WhatsApp username who did not share their
// phone number, known to the business by their business-scoped user id (BSUID) alone, who later
// writes with the phone as well.
const (
	usernameUserID  = "ID.4410982537716240981"
	usernameName    = "kadek_surfs_kuta"
	usernamePhone   = "6281377776666"
	usernameProfile = "Kadek Arimbawa"
)

// TestUsernameUserEndToEnd (issue 34, "Done when"): on the whole stack (the real webhook, the
// Cloud Tasks emulator, the worker, the fake Graph API, the fake Gemini and the fake action
// endpoint), a user with a username and no phone goes through a members-only tenant: a first
// message gets one onboarding prompt, an invite code one welcome, a booking one confirmation
// with buttons, the tap exactly one action call (whose "from" names the user by user_id and
// username, never a phone) and one "done" message; every reply goes out by "recipient" with no
// "to". A /v1/messages send by recipient inside the window is accepted, goes out by recipient,
// and its status webhook (by recipient_user_id alone) shows on GET /v1/messages/{id}. The same
// person then writes with a phone as well: the same contact and conversation, the reply by
// "to". Redelivered deliveries are answered once, and no log line holds the BSUID, the
// username or the phone.
func TestUsernameUserEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEventsStack(t)
	ctx := context.Background()
	const tenantID = "sunrise-bus"
	pn := whatsapp.DefaultSampleOptions.PhoneNumberID
	byBSUID := whatsapp.SampleOptions{UserID: usernameUserID, Username: usernameName, ContactName: usernameProfile, NoPhone: true}
	person := contact.Identity{UserID: usernameUserID}
	var inbound []string // every message the person sent, in order
	send := func(o whatsapp.SampleOptions, body func(whatsapp.SampleOptions) []byte) (string, []byte) {
		t.Helper()
		o.MessageID = whatsapp.NewMessageID()
		b := body(o)
		post(t, e.st, b)
		inbound = append(inbound, o.MessageID)
		return o.MessageID, b
	}
	text := func(s string) func(whatsapp.SampleOptions) []byte {
		return func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleText(o, s) }
	}

	// 1. A first message: one onboarding prompt, by recipient. The same delivery again (Meta's
	// redelivery) is not answered again.
	first, firstBody := send(byBSUID, text("hello, I want to book a bus"))
	post(t, e.st, firstBody)
	conv := e.conversationOf(t, tenantID, pn, person)
	prompt := e.answeredOnce(t, conv, first, byRecipient)
	if prompt.Key != string(i18n.OnboardingPrompt) {
		t.Errorf("the first message got %q (%s), want the onboarding prompt", prompt.Body, prompt.Key)
	}

	// 2. An invite code (as admin, who may book): one welcome; the BSUID is now a member.
	code, err := tenant.NewInviteCode()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.tenants.CreateInvite(ctx, tenantID, tenant.InviteCodeHash(code), tenant.RoleAdmin, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	redeem, _ := send(byBSUID, text(code))
	if welcome := e.answeredOnce(t, conv, redeem, byRecipient); welcome.Key != string(i18n.WelcomeName) && welcome.Key != string(i18n.Welcome) {
		t.Errorf("the invite code got %q (%s), want the welcome", welcome.Body, welcome.Key)
	}
	who := e.contactOf(t, tenantID, person)
	if m, ok, err := e.tenants.RuntimeMember(ctx, tenantID, who); err != nil || !ok || m.Role != tenant.RoleAdmin {
		t.Fatalf("the person after the invite code: %+v %v %v, want an admin", m, ok, err)
	}

	// 3. A booking: one confirmation, with the two buttons.
	booking, _ := send(byBSUID, text("book bus 01 for Pak Agus on 1 March, 15 million"))
	confirmation := e.answeredOnce(t, conv, booking, byRecipient)
	sent := e.sendOf(t, confirmation.IdempotencyKey)
	if sent.Body["type"] != "interactive" || !strings.Contains(string(sent.RawBody), "confirm_yes") {
		t.Fatalf("the booking's reply is not the confirmation with buttons: %s", sent.RawBody)
	}

	// 4. The tap on "yes", delivered twice: exactly one action call, then one "done" message.
	tap := byBSUID
	tap.ContextID = sent.MessageID
	yes, yesBody := send(tap, func(o whatsapp.SampleOptions) []byte { return whatsapp.SampleButtonReply(o, "confirm_yes", "Yes") })
	post(t, e.st, yesBody)
	if m := e.turnDone(t, conv, yes); len(m.Replies) != 0 {
		t.Errorf("the tap's turn replied %v itself, want the action step's one message only", replyKeys(m))
	}
	wctx, cancel := context.WithTimeout(ctx, eventsWait)
	defer cancel()
	calls, err := e.st.Action.WaitForCalls(wctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	call := calls[0]
	if call.Request == nil || !call.Verified || call.Intent != "create_booking" {
		t.Fatalf("the action call: %+v", call)
	}
	var body struct {
		From           map[string]any `json:"from"`
		ConversationID string         `json:"conversation_id"`
	}
	if err := json.Unmarshal([]byte(call.Body), &body); err != nil {
		t.Fatal(err)
	}
	if _, hasPhone := body.From["wa_id"]; hasPhone || body.From["user_id"] != usernameUserID || body.From["username"] != usernameName ||
		body.From["role"] != string(tenant.RoleAdmin) || body.ConversationID != conv {
		t.Errorf("the action body's from %v, conversation %s; want user_id and username, no wa_id, role admin, conversation %s",
			body.From, body.ConversationID, conv)
	}
	done := e.sendOf(t, tasks.ActionReplyKey(keyedid.Dev(), call.Request.ActionID))
	byRecipient(t, "the action's result", done)
	if tx, _ := done.Body["text"].(map[string]any); tx == nil || !strings.Contains(tx["body"].(string), "Done") {
		t.Errorf("the action's result message: %s, want the business's reply", done.RawBody)
	}

	// 5. /v1/messages by recipient alone, inside the window: 202, out by recipient; its status
	// by recipient_user_id alone shows on GET /v1/messages/{id}.
	e.v1ByRecipient(t, ctx, tenantID, pn)

	// 6. The same person writes with a phone as well: the same contact and conversation, the
	// reply by "to". The delivery twice: answered once.
	withPhone := whatsapp.SampleOptions{From: usernamePhone, UserID: usernameUserID, Username: usernameName, ContactName: usernameProfile}
	later, laterBody := send(withPhone, text("hello again, this is my phone"))
	post(t, e.st, laterBody)
	e.answeredOnce(t, conv, later, func(t *testing.T, what string, r graphfake.Request) {
		t.Helper()
		if r.Body["to"] != usernamePhone || r.Body["recipient"] != nil || r.Recipient != "" {
			t.Errorf("%s went to to=%v recipient=%v, want to the phone %s alone", what, r.Body["to"], r.Body["recipient"], usernamePhone)
		}
	})
	if byPhone := e.conversationOf(t, tenantID, pn, contact.Identity{WaID: usernamePhone}); byPhone != conv {
		t.Errorf("the conversation by phone is %s, by BSUID %s: want one", byPhone, conv)
	}
	if c := e.contactOf(t, tenantID, contact.Identity{WaID: usernamePhone}); c.ID != who.ID || c.UserID != usernameUserID || c.WaID != usernamePhone {
		t.Errorf("the contact by phone %s (user %q), want the BSUID's %s", c.ID, c.UserID, who.ID)
	}
	stored, err := e.conversations.Messages(ctx, conv, 100)
	if err != nil {
		t.Fatal(err)
	}
	var storedIDs []string
	for _, m := range stored {
		if m.Direction == store.DirectionIn {
			storedIDs = append(storedIDs, m.MessageID)
		}
	}
	for _, id := range inbound {
		if !slices.Contains(storedIDs, id) {
			t.Errorf("message %s is not stored in the conversation (inbound there: %d)", logRef(id), len(storedIDs))
		}
	}

	// Nothing was answered twice: every send carries its own reply key; there are exactly the
	// six messages above (prompt, welcome, confirmation, done, the /v1 send, the last reply);
	// the action ran once; nothing is dead.
	e.idle(t)
	perKey := map[string]int{}
	var sends []graphfake.Request
	for _, s := range e.st.Graph.Sends() {
		if s.Status == http.StatusOK {
			sends = append(sends, s)
			key, _ := s.Body["biz_opaque_callback_data"].(string)
			perKey[key]++
		}
	}
	for k, n := range perKey {
		if n != 1 {
			t.Errorf("%d sends with callback data %q, want 1", n, k)
		}
	}
	if len(sends) != 6 {
		t.Errorf("%d messages sent, want 6 (prompt, welcome, confirmation, done, the /v1 send, the reply by phone)", len(sends))
	}
	if calls := e.st.Action.Calls(); len(calls) != 1 || len(e.st.Action.Executed()) != 1 {
		t.Errorf("%d calls at the action endpoint (%d ran the action), want exactly one", len(calls), len(e.st.Action.Executed()))
	}
	if rep := e.health(t); rep.DeadLetters != 0 {
		t.Errorf("%d dead letters, want none", rep.DeadLetters)
	}

	// The logs name the person only by keyed references.
	if n := logcheck.Check(t, e.logs.String(), []string{usernamePhone}, []string{usernameUserID, usernameName, "@" + usernameName}); n == 0 {
		t.Error("no log lines were captured")
	}
}

// addressCheck checks whom a send went to.
type addressCheck func(t *testing.T, what string, r graphfake.Request)

// byRecipient: the send went by "recipient", the person's BSUID, with no "to".
func byRecipient(t *testing.T, what string, r graphfake.Request) {
	t.Helper()
	if _, hasTo := r.Body["to"]; hasTo || r.Body["recipient"] != usernameUserID || r.Recipient != usernameUserID {
		t.Errorf("%s went to to=%v recipient=%v, want recipient %s and no to", what, r.Body["to"], r.Body["recipient"], usernameUserID)
	}
}

// answeredOnce waits for the turn of message id in the conversation, requires it to have
// decided exactly one reply, and checks that reply went out to Graph once, addressed as check
// says. It returns the reply.
func (e *eventsStack) answeredOnce(t *testing.T, conv, id string, check addressCheck) store.Reply {
	t.Helper()
	m := e.turnDone(t, conv, id)
	if len(m.Replies) != 1 {
		t.Fatalf("message %s got replies %v, want one", logRef(id), replyKeys(m))
	}
	r := m.Replies[0]
	check(t, "the reply to "+logRef(id), e.sendOf(t, r.IdempotencyKey))
	return r
}

// sendOf waits for the send whose callback data is key to reach the fake Graph API, and
// requires it to be the only one.
func (e *eventsStack) sendOf(t *testing.T, key string) graphfake.Request {
	t.Helper()
	var got []graphfake.Request
	testenv.Eventually(t, eventsWait, func() bool {
		got = got[:0]
		for _, s := range e.st.Graph.Sends() {
			if s.Status == http.StatusOK && s.Body["biz_opaque_callback_data"] == key {
				got = append(got, s)
			}
		}
		return len(got) > 0
	}, "no send with callback data %s reached the fake Graph API", key)
	if len(got) != 1 {
		t.Errorf("%d sends with callback data %s, want 1", len(got), key)
	}
	return got[0]
}

// idle waits for every queue of the stack to be empty, so that a duplicate would have been sent
// by now.
func (e *eventsStack) idle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	tc, err := cloudtasksemu.NewClient(ctx, e.st.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	testenv.Eventually(t, eventsWait, func() bool {
		queues := tc.ListQueues(ctx, &cloudtaskspb.ListQueuesRequest{Parent: strings.TrimSuffix(e.st.QueuePath("x"), "/queues/x")})
		for {
			q, err := queues.Next()
			if errors.Is(err, iterator.Done) {
				return true
			}
			if err != nil {
				return false
			}
			if _, err := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q.GetName()}).Next(); !errors.Is(err, iterator.Done) {
				return false
			}
		}
	}, "the queues never emptied")
}

// v1ByRecipient sends a text by /v1/messages with "recipient" (the BSUID) and no "to", checks
// it goes out by recipient, posts its delivered status (recipient_user_id, no recipient_id) and
// reads it back on GET /v1/messages/{id}.
func (e *eventsStack) v1ByRecipient(t *testing.T, ctx context.Context, tenantID, pn string) {
	t.Helper()
	key, keyID, hash, _ := apikey.New()
	if err := store.NewAPIKeys(e.db, store.Options{}).CreateAPIKey(ctx, store.APIKeyRecord{ID: keyID, TenantID: tenantID, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	call := func(method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, e.st.APIURL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "by-recipient-1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	code, raw := call(http.MethodPost, "/v1/messages",
		[]byte(`{"phone_number_id":"`+pn+`","recipient":"`+usernameUserID+`","type":"text","text":{"body":"your bus leaves at 8"}}`))
	var accepted struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &accepted); err != nil || code != http.StatusAccepted || accepted.ID == "" {
		t.Fatalf("POST /v1/messages by recipient: %d %s, want 202 with an id", code, raw)
	}
	var out graphfake.Request
	testenv.Eventually(t, eventsWait, func() bool {
		for _, s := range e.st.Graph.Sends() {
			if tx, _ := s.Body["text"].(map[string]any); s.Status == http.StatusOK && tx != nil && tx["body"] == "your bus leaves at 8" {
				out = s
				return true
			}
		}
		return false
	}, "the /v1 send never reached the fake Graph API")
	byRecipient(t, "the /v1 send", out)

	callback, _ := out.Body["biz_opaque_callback_data"].(string)
	post(t, e.st, whatsapp.SampleStatus(whatsapp.SampleOptions{NoPhone: true, UserID: usernameUserID, MessageID: out.MessageID,
		BizOpaqueCallbackData: callback}, "delivered"))
	var state struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		GraphMessageID string `json:"graph_message_id"`
	}
	testenv.Eventually(t, eventsWait, func() bool {
		code, raw := call(http.MethodGet, "/v1/messages/"+accepted.ID, nil)
		return code == http.StatusOK && json.Unmarshal(raw, &state) == nil && state.Status == "delivered"
	}, "GET /v1/messages/%s never showed the delivered status (last: %+v)", accepted.ID, &state)
	if state.GraphMessageID != out.MessageID {
		t.Errorf("GET /v1/messages/%s: graph_message_id %s, want %s", accepted.ID, state.GraphMessageID, out.MessageID)
	}
}

// logRef names a wamid in a test message without writing it whole.
func logRef(id string) string {
	if len(id) > 16 {
		return id[:16] + "…"
	}
	return id
}
