package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	wacontact "github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const (
	number  = "200000000000101"
	contact = "33612345678"
	token   = "tenant-token-1"
)

// stack is the whole pipeline with the api, one tenant "acme" (number, token) and its API key.
type stack struct {
	*devstack.Stack
	t     testing.TB
	db    *store.DB
	creds *operator.Credentials
	key   string
	logs  *testenv.LogBuffer
}

// newStack starts the stack; adjust, when given, changes its options before it starts.
func newStack(t testing.TB, tenantExtra string, adjust ...func(*devstack.Options)) *stack {
	t.Helper()
	host := testenv.FirestoreHost(t)
	fs, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	queues := testenv.FastQueues(t)
	opts := devstack.Options{
		FirestoreHost: host, Project: project, Queues: queues, NoTenants: true,
		Logs: func(string) io.Writer { return logs },
	}
	for _, f := range adjust {
		f(&opts)
	}
	st, err := devstack.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	ctx := context.Background()
	db := store.NewDB(fs)
	admin, err := taskqueue.NewAdmin(ctx, project, st.Location, st.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: project, Location: st.Location, EmulatorHost: st.TasksAddr,
		BaseURL: st.WorkerURL, Token: st.InternalToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tq.Close() })
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keeper.Close() })
	tenants := store.NewTenants(db, store.Options{})
	sends := store.NewSends(db, store.Options{})
	ops := &operator.Tenants{Store: tenants, Queues: admin, QueueFile: queues, Sealer: keeper}
	creds := &operator.Credentials{Tenants: ops, Keys: store.NewAPIKeys(db, store.Options{}), Secrets: tenants,
		PublicBaseURL: st.APIURL,
		Release: func(ctx context.Context, id string) (int, error) {
			return outbox.ReleaseParked(ctx, sends, tq, id, "test-release")
		}}
	file := fmt.Sprintf("id: acme\nname: Acme\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: \"300000000000001\"}\n%s", number, tenantExtra)
	if _, err := ops.Apply(ctx, []byte(file), false); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if _, _, err := creds.SetToken(ctx, "acme", token, false); err != nil {
		t.Fatal(err)
	}
	st.Graph.AcceptToken(token)
	key, err := creds.APIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	return &stack{Stack: st, t: t, db: db, creds: creds, key: key, logs: logs}
}

// openWindow records an inbound message from the phone to, at, on the conversation, as a turn
// does.
func (s *stack) openWindow(to string, at time.Time) {
	s.t.Helper()
	s.openWindowOf(wacontact.Identity{WaID: to}, at)
}

// openWindowOf records an inbound message from the person id names (by phone, BSUID or both), at,
// on their conversation, as the worker does: it resolves the tenant's contact of the person, finds
// its conversation on the number and touches it with the message.
func (s *stack) openWindowOf(id wacontact.Identity, at time.Time) store.Contact {
	s.t.Helper()
	ctx := context.Background()
	res, err := store.NewContacts(s.db, store.Options{}).Resolve(ctx, "acme", id)
	if err != nil {
		s.t.Fatalf("resolve the contact: %v", err)
	}
	cs := store.NewConversationStore(s.db, store.Options{})
	convID, err := cs.Locate(ctx, "acme", number, res.Contact)
	if err != nil {
		s.t.Fatalf("locate the conversation: %v", err)
	}
	conv, ok, err := cs.Acquire(ctx, convID, "test", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: number,
		ContactID: res.Contact.ID, Contact: id.WaID, UserID: id.UserID, InboundAt: at})
	if err != nil || !ok {
		s.t.Fatalf("acquire: %v %v", ok, err)
	}
	if err := cs.Release(ctx, convID, conv.Lease); err != nil {
		s.t.Fatal(err)
	}
	return res.Contact
}

type answer struct {
	Status int
	Body   map[string]any
}

func (a answer) errorCode() string {
	e, _ := a.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (s *stack) post(key, idem, body string) answer {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.APIURL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	return s.do(req)
}

func (s *stack) get(id string) answer {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.APIURL+"/v1/messages/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	return s.do(req)
}

func (s *stack) do(req *http.Request) answer {
	s.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	a.Status = resp.StatusCode
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &a.Body)
	return a
}

// waitStatus polls GET /v1/messages/{id} until it says want.
func (s *stack) waitStatus(id, want string) answer {
	s.t.Helper()
	var last answer
	testenv.Eventually(s.t, 20*time.Second, func() bool {
		last = s.get(id)
		return last.Body["status"] == want
	}, "message %s never %s (last %v)", id, want, &last)
	return last
}

// sendsWithKey are the sends the fake accepted carrying key as callback data.
func (s *stack) sendsWithKey(key string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range s.Graph.Sends() {
		if r.Body["biz_opaque_callback_data"] == key {
			out = append(out, r)
		}
	}
	return out
}

func (s *stack) deliver(body []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.WebhookURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, s.AppSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
}

const textBody = `{"to":"` + contact + `","type":"text","text":{"body":"Your bus leaves at 9"}}`

func TestSendHappyPathSentThenDelivered(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	a := s.post(s.key, "", textBody)
	id, _ := a.Body["id"].(string)
	if a.Status != http.StatusAccepted || a.Body["status"] != "queued" || id == "" {
		t.Fatalf("POST answered %d %v", a.Status, a.Body)
	}
	got := s.waitStatus(id, "sent")
	wamid, _ := got.Body["graph_message_id"].(string)
	sends := s.sendsWithKey(tasks.SendKey(id))
	if len(sends) != 1 || sends[0].MessageID != wamid || sends[0].Token != token || sends[0].PhoneNumberID != number {
		t.Fatalf("sends %+v, want one with the tenant's token and number, wamid %s", sends, wamid)
	}
	s.deliver(whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: number, From: contact, MessageID: wamid,
		BizOpaqueCallbackData: tasks.SendKey(id)}, "delivered"))
	s.waitStatus(id, "delivered")
	if strings.Contains(s.logs.String(), contact) || strings.Contains(s.logs.String(), s.key) {
		t.Error("a log line carries the contact's number or the API key")
	}
}

func TestIdempotencyKeyReplaysSendOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	first := s.post(s.key, "order-42", textBody)
	second := s.post(s.key, "order-42", textBody)
	if first.Status != http.StatusAccepted || second.Status != http.StatusAccepted || first.Body["id"] != second.Body["id"] {
		t.Fatalf("same key twice: %v then %v, want one id", first.Body, second.Body)
	}
	id := first.Body["id"].(string)
	s.waitStatus(id, "sent")
	if again := s.post(s.key, "order-42", textBody); again.Body["id"] != id || again.Body["status"] != "sent" {
		t.Fatalf("replay after the send: %v", again.Body)
	}
	other := s.post(s.key, "order-42", strings.Replace(textBody, "9", "10", 1))
	if other.Status != http.StatusUnprocessableEntity || other.errorCode() != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %d %v, want 422", other.Status, other.Body)
	}
	if n := len(s.sendsWithKey(tasks.SendKey(id))); n != 1 {
		t.Fatalf("%d Graph sends, want 1", n)
	}
}

func TestBadRequestsAndKeysAreRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	s.openWindow(contact, time.Now().Add(-time.Hour))
	long := strings.Repeat("a", 4097)
	btn := func(n int, title string) string {
		var bs []string
		for i := range n {
			bs = append(bs, fmt.Sprintf(`{"type":"reply","reply":{"id":"b%d","title":%q}}`, i, title))
		}
		return `{"to":"` + contact + `","type":"interactive","interactive":{"type":"button","body":{"text":"Pick"},"action":{"buttons":[` + strings.Join(bs, ",") + `]}}}`
	}
	rows := func(n int) string {
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"id":"r%d","title":"Row %d"}`, i, i))
		}
		return `{"to":"` + contact + `","type":"interactive","interactive":{"type":"list","body":{"text":"Pick"},"action":{"button":"Open","sections":[{"title":"S","rows":[` + strings.Join(rs, ",") + `]}]}}}`
	}
	revoked, err := s.creds.APIKey(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	revokedID := strings.Split(strings.TrimPrefix(revoked, "wpk_"), "_")[0]
	if err := store.NewAPIKeys(s.db, store.Options{}).RevokeAPIKey(context.Background(), revokedID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"no key", "", textBody, 401, "unauthenticated"},
		{"malformed key", "nope", textBody, 401, "unauthenticated"},
		{"unknown key", "wpk_0123456789abcdef_" + strings.Repeat("A", 43), textBody, 401, "unauthenticated"},
		{"wrong secret", s.key[:len(s.key)-4] + "AAAA", textBody, 401, "unauthenticated"},
		{"revoked key", revoked, textBody, 401, "unauthenticated"},
		{"not JSON", s.key, `{`, 400, "invalid_request"},
		{"unknown field", s.key, `{"to":"` + contact + `","type":"text","text":{"body":"x"},"cc":"1"}`, 400, "invalid_request"},
		{"no to", s.key, `{"type":"text","text":{"body":"x"}}`, 400, "invalid_request"},
		{"to with plus", s.key, `{"to":"+33612345678","type":"text","text":{"body":"x"}}`, 400, "invalid_request"},
		{"to too short", s.key, `{"to":"1234","type":"text","text":{"body":"x"}}`, 400, "invalid_request"},
		{"no type", s.key, `{"to":"` + contact + `","text":{"body":"x"}}`, 400, "invalid_request"},
		{"unsupported type", s.key, `{"to":"` + contact + `","type":"image","text":{"body":"x"}}`, 400, "invalid_request"},
		{"type without object", s.key, `{"to":"` + contact + `","type":"text"}`, 400, "invalid_request"},
		{"two objects", s.key, `{"to":"` + contact + `","type":"text","text":{"body":"x"},"template":{"name":"a","language":{"code":"en"}}}`, 400, "invalid_request"},
		{"empty text", s.key, `{"to":"` + contact + `","type":"text","text":{"body":" "}}`, 400, "invalid_request"},
		{"text over 4096", s.key, `{"to":"` + contact + `","type":"text","text":{"body":"` + long + `"}}`, 400, "invalid_request"},
		{"template without name", s.key, `{"to":"` + contact + `","type":"template","template":{"language":{"code":"en"}}}`, 400, "invalid_request"},
		{"template without language", s.key, `{"to":"` + contact + `","type":"template","template":{"name":"hello_world"}}`, 400, "invalid_request"},
		{"four buttons", s.key, btn(4, "OK"), 400, "invalid_request"},
		{"button title over 20", s.key, btn(1, strings.Repeat("x", 21)), 400, "invalid_request"},
		{"eleven rows", s.key, rows(11), 400, "invalid_request"},
		{"foreign number", s.key, `{"to":"` + contact + `","phone_number_id":"999","type":"text","text":{"body":"x"}}`, 400, "invalid_request"},
	}
	for _, c := range cases {
		a := s.post(c.key, "", c.body)
		if a.Status != c.status || a.errorCode() != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, a.Status, a.Body, c.status, c.code)
		}
	}
	if ok := s.post(s.key, "", btn(3, strings.Repeat("x", 20))); ok.Status != http.StatusAccepted {
		t.Errorf("three buttons of 20: %d %v", ok.Status, ok.Body)
	}
	if ok := s.post(s.key, "", rows(10)); ok.Status != http.StatusAccepted {
		t.Errorf("ten rows: %d %v", ok.Status, ok.Body)
	}
	if a := s.get("msg_" + strings.Repeat("0", 32)); a.Status != http.StatusNotFound {
		t.Errorf("GET of an unknown id: %d", a.Status)
	}
}

func TestOutsideWindowTextRefusedTemplateAccepted(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	if a := s.post(s.key, "", textBody); a.Status != http.StatusUnprocessableEntity || a.errorCode() != "outside_customer_service_window" {
		t.Fatalf("text to a contact who never wrote: %d %v, want 422", a.Status, a.Body)
	}
	s.openWindow(contact, time.Now().Add(-25*time.Hour))
	if a := s.post(s.key, "", textBody); a.Status != http.StatusUnprocessableEntity {
		t.Fatalf("text 25 h after the last message: %d, want 422", a.Status)
	}
	a := s.post(s.key, "", `{"to":"`+contact+`","type":"template","template":{"name":"hello_world","language":{"code":"en_US"}}}`)
	if a.Status != http.StatusAccepted {
		t.Fatalf("template: %d %v, want 202", a.Status, a.Body)
	}
	s.waitStatus(a.Body["id"].(string), "sent")
	bad := s.post(s.key, "", `{"to":"`+contact+`","type":"template","template":{"name":"no_such_template","language":{"code":"en_US"}}}`)
	got := s.waitStatus(bad.Body["id"].(string), "failed")
	if e, _ := got.Body["error"].(map[string]any); e["code"] != float64(132001) {
		t.Fatalf("unknown template: %v, want failed with 132001", got.Body)
	}
}

// TestRevokedTokenParksThenSetTokenReleasesOnce: a reply meets the revoked token (190), the
// tenant becomes needs_reauth once; three more replies and two API sends park without a Graph
// call; the API answers 409; a new token releases the parked sends (the one that met the error,
// the three replies, the two API sends), each sent once, in order.
func TestRevokedTokenParksThenSetTokenReleasesOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t, "")
	ctx := context.Background()
	s.openWindow(contact, time.Now().Add(-time.Hour))
	apiA := s.post(s.key, "a", textBody)
	s.waitStatus(apiA.Body["id"].(string), "sent")
	s.Graph.RevokeToken(token)
	say := func(text string) string {
		p := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: number, From: contact}, text)
		s.deliver(p)
		m, _ := whatsapp.Parse(p)
		msgs, _ := whatsapp.Normalize(m)
		return msgs[0].ID
	}
	out := store.NewOutbound(s.db, store.Options{})
	tenants := store.NewTenants(s.db, store.Options{})
	first := say("hello")
	testenv.Eventually(t, 20*time.Second, func() bool {
		rec, err := tenants.Get(ctx, "acme")
		return err == nil && rec.AuthStatus == store.AuthNeedsReauth
	}, "tenant never needs_reauth")
	keys := []string{tasks.IdempotencyKey(s.db.Keyer(), first)}
	for i := range 3 {
		keys = append(keys, tasks.IdempotencyKey(s.db.Keyer(), say(fmt.Sprintf("more %d", i))))
	}
	// The API refuses new sends; sends accepted just before the marking park. Two records stand
	// for those: the first made as the api makes them (naming the contact's conversation, whose
	// window it was accepted in), the second as it made them before contacts (no conversation:
	// its window is the conversation of its contact's phone).
	if a := s.post(s.key, "", textBody); a.Status != http.StatusConflict || a.errorCode() != "WHATSAPP_REAUTH_REQUIRED" {
		t.Fatalf("POST while needs_reauth: %d %v, want 409", a.Status, a.Body)
	}
	convID, ok, err := store.NewConversationStore(s.db, store.Options{}).ConversationOf(ctx, "acme", number, wacontact.Identity{WaID: contact})
	if err != nil || !ok {
		t.Fatalf("the contact's conversation: %v %v", ok, err)
	}
	sends := store.NewSends(s.db, store.Options{})
	for i, conv := range []string{convID, ""} {
		id := fmt.Sprintf("msg_%032d", i+1)
		key := tasks.SendKey(id)
		if _, _, err := sends.CreateSend(ctx, store.OutboundRecord{IdempotencyKey: key, Source: store.SourceAPI, APIMessageID: id,
			TenantID: "acme", PhoneNumberID: number, To: contact, ConversationID: conv,
			Message: `{"type":"text","text":{"body":"queued before"}}`, MessageType: "text"}); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(tasks.Send{IdempotencyKey: key, TenantID: "acme"})
		tq, _ := taskqueue.New(ctx, taskqueue.Config{ProjectID: s.Project, Location: s.Location, EmulatorHost: s.TasksAddr, BaseURL: s.WorkerURL, Token: s.InternalToken})
		if _, err := tq.Enqueue(ctx, taskqueue.Task{Queue: tasks.TenantQueueID("acme"), ID: tasks.SendTaskID(key, 0), Path: tasks.ProcessSendPath, Body: body}); err != nil {
			t.Fatal(err)
		}
		tq.Close()
		keys = append(keys, key)
	}
	testenv.Eventually(t, 20*time.Second, func() bool {
		for _, k := range keys {
			if rec, err := out.GetOutbound(ctx, k); err != nil || rec.State != store.OutboundParked {
				return false
			}
		}
		return true
	}, "the sends never all parked")
	hreq, _ := http.NewRequest(http.MethodGet, s.WorkerURL+"/internal/health", nil)
	hreq.Header.Set(tasks.HeaderInternalToken, s.InternalToken)
	if h := s.do(hreq); fmt.Sprint(h.Body["tenants_needing_reauth"]) != "[acme]" {
		t.Errorf("worker health: %v, want tenants_needing_reauth [acme]", h.Body)
	}
	if n := s.logs.Count("tenant_needs_reauth"); n != 1 {
		t.Errorf("tenant_needs_reauth logged %d times, want once", n)
	}
	const newToken = "tenant-token-2"
	s.Graph.AcceptToken(newToken)
	_, released, err := s.creds.SetToken(ctx, "acme", newToken, false)
	// The reply that met the error parks too (CONTRACT.md, Token lifecycle): six in all.
	if err != nil || released != len(keys) {
		t.Fatalf("set-token released %d, %v; want %d", released, err, len(keys))
	}
	if _, again, err := s.creds.SetToken(ctx, "acme", newToken, false); err != nil || again != 0 {
		// The tasks may not have run yet: a second release re-enqueues the same task names.
		t.Logf("second set-token: %d %v", again, err)
	}
	// The record says sent a moment after the send reached the fake: wait for both.
	testenv.Eventually(t, 20*time.Second, func() bool {
		for _, k := range keys {
			if rec, _ := out.GetOutbound(ctx, k); len(s.sendsWithKey(k)) != 1 || rec.State != store.OutboundSent {
				return false
			}
		}
		return true
	}, "the parked sends did not all go out and settle")
	for _, k := range keys {
		if got := s.sendsWithKey(k); len(got) != 1 || got[0].Token != newToken {
			t.Errorf("%s: %d sends, want one with the new token", k, len(got))
		}
		if rec, _ := out.GetOutbound(ctx, k); rec.State != store.OutboundSent {
			t.Errorf("%s: state %s, want sent", k, rec.State)
		}
	}
	if a := s.post(s.key, "", textBody); a.Status != http.StatusAccepted {
		t.Fatalf("POST after the new token: %d %v", a.Status, a.Body)
	}
}
