package delivery_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

const (
	number  = "111"
	contact = "33612345678"
	token   = "EAAtoken"
	// conversationID is the contact's conversation on the number: the window is read from it
	// (Request.ConversationID, a record's ConversationID).
	conversationID = "conv_contact"
)

// clock is the store's and the deliverer's time, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// tenants reads the stored tenants, like the worker's cache: stale answers the token before the
// current one (the cache a few seconds behind a new token) until TokenRefused.
type tenants struct {
	*store.Tenants
	mu    sync.Mutex
	stale bool
}

func (t *tenants) Tenant(ctx context.Context, id string) (store.TenantRecord, error) {
	rec, err := t.Get(ctx, id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && t.stale {
		rec.AccessToken, rec.TokenSetAt = []byte("EAAold"), rec.TokenSetAt.Add(-time.Hour)
	}
	return rec, err
}

func (t *tenants) TokenRefused(store.TenantRecord) { t.mu.Lock(); t.stale = false; t.mu.Unlock() }

// tokens stores tokens in clear: the test is about delivery, not sealing.
type tokens struct{}

func (tokens) Token(_ context.Context, rec store.TenantRecord) (string, error) {
	return string(rec.AccessToken), nil
}

// windows is the contact's conversation (conversationID), whose last inbound message was at
// last; there is no other.
type windows struct{ last time.Time }

func (w windows) Get(_ context.Context, id string) (store.Conversation, error) {
	if id != conversationID {
		return store.Conversation{}, store.ErrNotFound
	}
	return store.Conversation{ID: id, LastInboundAt: w.last}, nil
}

// env is one case's world: its own Firestore project, Graph fake and deliverer.
type env struct {
	t       *testing.T
	clk     *clock
	fake    *graphfake.Fake
	out     *store.Outbound
	sends   *store.Sends
	tenants *tenants
	dls     *store.DeadLetterStore
	d       *delivery.Deliverer
}

func newEnv(t *testing.T, tenantToken string, lastInbound time.Time) *env {
	t.Helper()
	db, _ := testenv.Store(t)
	clk := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	opts := store.Options{Now: clk.now}
	fake := graphfake.New(graphfake.WithToken(token))
	fake.AddTemplate("hello_again")
	fake.AddTemplate(notifyTemplate)
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	gc, err := graph.NewClient(srv.URL+"/"+graph.Version, "", &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clk: clk, fake: fake, out: store.NewOutbound(db, opts), sends: store.NewSends(db, opts),
		tenants: &tenants{Tenants: store.NewTenants(db, opts)}}
	tn, err := tenant.Parse([]byte("id: acme\nname: Acme\nlanguage: en\naudience: public\n" +
		"templates: {reengage: {name: hello_again, language: en}}\n" +
		"phone_numbers:\n  - {phone_number_id: \"" + number + "\", waba_id: \"900\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	if tenantToken != "" {
		if _, err := e.tenants.SetAccessToken(ctx, "acme", []byte(tenantToken)); err != nil {
			t.Fatal(err)
		}
	}
	e.dls = store.NewDeadLetters(db, opts)
	e.d = &delivery.Deliverer{Records: e.out, Sends: e.sends, Sender: delivery.NewGraphSender(gc), Tenants: e.tenants,
		Tokens: tokens{}, Windows: windows{last: lastInbound}, Hasher: logging.DevHasher(), Now: clk.now,
		Unknowns: e.out, DeadLetters: e.dls}
	return e
}

// deliver sends one message of kind as its caller does: a reply with its request, a send from
// its record through DeliverStored.
func (e *env) deliver(kind delivery.Kind, tenantID, key string, lastAttempt bool) delivery.Result {
	e.t.Helper()
	ctx := context.Background()
	switch kind {
	case delivery.APISend, delivery.ConsoleReply, delivery.ParkedRelease, delivery.Notification:
		var gen int64
		if kind == delivery.ParkedRelease {
			gen = 1
		}
		return e.d.DeliverStored(ctx, delivery.Stored{Key: key, TenantID: tenantID, ReleaseGen: gen, LastAttempt: lastAttempt})
	}
	req := delivery.Request{Kind: kind, Key: key, TenantID: tenantID, PhoneNumberID: number, To: contact, ConversationID: conversationID,
		InboundMessageID: "wamid.in-" + key, LastAttempt: lastAttempt, LastInbound: e.clk.now()}
	if kind == delivery.DefaultReply {
		req.TenantID, req.Token = "", token
		req.Compose = func(context.Context) (outgoing.Message, error) { return outgoing.Message{Text: "hello"}, nil }
	} else {
		req.Reply = outgoing.Message{Text: "hello"}
	}
	return e.d.Deliver(ctx, req)
}

// seed creates the record a send from its record goes out from.
func (e *env) seed(kind delivery.Kind, tenantID, key string) {
	e.t.Helper()
	source := map[delivery.Kind]string{delivery.APISend: store.SourceAPI, delivery.ConsoleReply: store.SourceConsole,
		delivery.Notification: store.SourceNotification}[kind]
	var fallback string
	switch kind {
	case delivery.APISend, delivery.ConsoleReply, delivery.ParkedRelease:
	case delivery.Notification:
		fallback = notifyFallback
	default:
		return
	}
	if _, _, err := e.sends.CreateSend(context.Background(), store.OutboundRecord{IdempotencyKey: key, Source: source,
		TenantID: tenantID, PhoneNumberID: number, To: contact, ConversationID: conversationID, Message: `{"type":"text","text":{"body":"hello"}}`,
		MessageType: "text", Fallback: fallback}); err != nil {
		e.t.Fatal(err)
	}
}

// sendingSince leaves the record of key sending, as a send whose outcome never came back does.
func (e *env) sendingSince(key, tenantID string) {
	e.t.Helper()
	if _, _, err := e.out.BeginSend(context.Background(), store.OutboundRecord{IdempotencyKey: key, TenantID: tenantID, PhoneNumberID: number}); err != nil {
		e.t.Fatal(err)
	}
}

// statusFlowing makes the evidence that statuses flow for the number: a later send from it, begun
// after every send so far, whose status webhook arrived.
func (e *env) statusFlowing(tenantID string) {
	e.t.Helper()
	ctx := context.Background()
	e.clk.add(time.Second)
	if _, _, err := e.out.BeginSend(ctx, store.OutboundRecord{IdempotencyKey: "later", TenantID: tenantID, PhoneNumberID: number}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.out.ApplyStatus(ctx, store.StatusUpdate{Key: "later", GraphMessageID: "wamid.later", Status: store.DeliverySent,
		PhoneNumberID: number, TenantID: tenantID}); err != nil {
		e.t.Fatal(err)
	}
}

// resendScheduled does what an earlier attempt did once the evidence said Meta never took the
// send of key: it scheduled the resend (store.Outbound.ResendUnknown's first step).
func (e *env) resendScheduled(key string) {
	e.t.Helper()
	rec, err := e.out.GetOutbound(context.Background(), key)
	if err != nil {
		e.t.Fatal(err)
	}
	if dec, _, err := e.out.ResendUnknown(context.Background(), key, rec.SendingSince, delivery.DefaultResendConfirm); err != nil || dec != store.AwaitReconcile {
		e.t.Fatalf("schedule the resend: %v %v", dec, err)
	}
}

// sendCalls counts the message sends Graph received, refused ones included (a send whose token
// the fake refused is not decoded, so it is of kind other).
func (e *env) sendCalls() int {
	n := 0
	for _, r := range e.fake.Requests() {
		if r.Method == http.MethodPost && r.PhoneNumberID != "" && r.Kind != graphfake.KindRead {
			n++
		}
	}
	return n
}

// want is a case's expected end, for one kind.
type want struct {
	status     delivery.Status
	state      string // the record's final state
	reason     string // its failure_reason
	deadLetter bool   // the task is kept as the dead letter
	recordDL   bool   // the record is its own dead letter (the task ends normally)
	graphCalls int    // message sends Graph received, refused ones included
}

var (
	replies = []delivery.Kind{delivery.ConversationReply, delivery.ActionResult}
	stored  = []delivery.Kind{delivery.APISend, delivery.ConsoleReply, delivery.ParkedRelease, delivery.Notification}
)

// A notification's record carries its templates.notify as the fallback outside the window.
const (
	notifyTemplate = "new_request"
	notifyFallback = `{"type":"template","template":{"name":"new_request","language":{"code":"en"},"components":[{"type":"body","parameters":[{"type":"text","text":"create_booking"}]}]}}`
)

// each gives every kind in kinds the same want.
func each(m map[delivery.Kind]want, w want, kinds ...delivery.Kind) map[delivery.Kind]want {
	for _, k := range kinds {
		m[k] = w
	}
	return m
}

// without removes kinds from m.
func without(m map[delivery.Kind]want, kinds ...delivery.Kind) map[delivery.Kind]want {
	for _, k := range kinds {
		delete(m, k)
	}
	return m
}

// checkEnd checks what the record and the dead letters say beside the result: a held send keeps
// its message and the cap of its wait, a resent one counts the resend, and a record given up as
// its own dead letter keeps its message and has a process_send dead letter that names it.
func checkEnd(t *testing.T, e *env, kind delivery.Kind, key string, res delivery.Result, rec store.OutboundRecord) {
	t.Helper()
	switch {
	case res.Status == delivery.Held:
		if !rec.OutcomeHeld || !rec.HeldUntil.Equal(rec.SendingSince.Add(delivery.DefaultMaxUnknownWait)) || rec.Message == "" {
			t.Errorf("%s: held record: outcome_held %v, held_until %v (sending since %v), message kept %v",
				kind, rec.OutcomeHeld, rec.HeldUntil, rec.SendingSince, rec.Message != "")
		}
	case res.Status == delivery.Sent && strings.HasSuffix(t.Name(), "resent/"+kind.String()):
		if rec.UnknownResends != 1 || rec.OutcomeHeld {
			t.Errorf("%s: resent record: unknown_resends %d, outcome_held %v", kind, rec.UnknownResends, rec.OutcomeHeld)
		}
	case res.DeadLetterID != "":
		dls, err := e.dls.ListDeadLetters(context.Background(), true, 10)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range dls {
			found = found || (d.ID == res.DeadLetterID && d.Path == tasks.ProcessSendPath && d.IdempotencyKey == key &&
				d.Queue == tasks.TenantQueueID(rec.TenantID) && strings.Contains(d.Body, key))
		}
		if !found || rec.Message == "" {
			t.Errorf("%s: record dead letter %s found %v in %+v; message kept %v", kind, res.DeadLetterID, found, dls, rec.Message != "")
		}
	}
}

// TestPolicies runs each row of the policy table (issue 23) for each kind of send against the
// Firestore emulator and the Graph fake: the record's final state and reason code, whether the
// task is kept as a dead letter, whether the send is parked, and how many sends Graph received.
func TestPolicies(t *testing.T) {
	t.Parallel()
	failed := func(reason string, dl bool, calls int) want {
		return want{status: delivery.Refused, state: store.OutboundFailed, reason: reason, deadLetter: dl, graphCalls: calls}
	}
	// givenUp is a send ended unsent for good: a reply dead-letters its record, the others their
	// task (delivery.Policy.RecordDeadLetter).
	givenUp := func(status delivery.Status, reason string, calls int) map[delivery.Kind]want {
		w := want{status: status, state: store.OutboundFailed, reason: reason, deadLetter: true, graphCalls: calls}
		m := each(map[delivery.Kind]want{}, w, append(stored, delivery.DefaultReply)...)
		w.deadLetter, w.recordDL = false, true
		return each(m, w, replies...)
	}
	held := want{status: delivery.Held, state: store.OutboundSending}
	sent := func(calls int) want { return want{status: delivery.Sent, state: store.OutboundSent, graphCalls: calls} }
	parked := want{status: delivery.Parked, state: store.OutboundParked, graphCalls: 1}
	tests := []struct {
		name string
		// tenantToken is the tenant's stored token ("" for none); tenantID the send's tenant.
		tenantToken, tenantID string
		// lastInbound is the contact's last message, before now.
		lastInbound time.Duration
		lastAttempt bool
		setup       func(e *env, key string)
		want        map[delivery.Kind]want
	}{
		{
			name: "outcome unknown on the last attempt: held on the record", tenantToken: token, tenantID: "acme", lastAttempt: true,
			setup: func(e *env, key string) { e.sendingSince(key, "acme") },
			want:  each(map[delivery.Kind]want{}, held, delivery.Kinds...),
		},
		{
			name: "outcome unknown past the reconcile window, no status flowing: held on the record", tenantToken: token, tenantID: "acme",
			setup: func(e *env, key string) {
				e.sendingSince(key, "acme")
				e.clk.add(store.DefaultReconcileWindow + time.Minute)
			},
			want: each(map[delivery.Kind]want{}, held, delivery.Kinds...),
		},
		{
			name: "outcome unknown past the reconcile window, statuses flowing for later sends: resend scheduled", tenantToken: token, tenantID: "acme",
			setup: func(e *env, key string) {
				e.sendingSince(key, "acme")
				e.statusFlowing("acme")
				e.clk.add(store.DefaultReconcileWindow + time.Minute)
			},
			want: each(map[delivery.Kind]want{}, want{status: delivery.Retry, state: store.OutboundSending}, delivery.Kinds...),
		},
		{
			name: "outcome unknown past the reconcile window, statuses flowing for later sends: resent", tenantToken: token, tenantID: "acme",
			setup: func(e *env, key string) {
				e.sendingSince(key, "acme")
				e.statusFlowing("acme")
				e.clk.add(store.DefaultReconcileWindow + time.Minute)
				// An earlier attempt scheduled the resend; no status came meanwhile.
				e.resendScheduled(key)
				e.clk.add(delivery.DefaultResendConfirm)
			},
			want: each(map[delivery.Kind]want{}, sent(1), delivery.Kinds...),
		},
		{
			name: "outcome unknown, resend scheduled, then its status came: not resent", tenantToken: token, tenantID: "acme",
			setup: func(e *env, key string) {
				e.sendingSince(key, "acme")
				e.statusFlowing("acme")
				e.clk.add(store.DefaultReconcileWindow + time.Minute)
				e.resendScheduled(key)
				if _, err := e.out.ApplyStatus(context.Background(), store.StatusUpdate{Key: key, GraphMessageID: "wamid.late", Status: store.DeliverySent,
					PhoneNumberID: number, TenantID: "acme"}); err != nil {
					e.t.Fatal(err)
				}
				e.clk.add(delivery.DefaultResendConfirm)
			},
			want: each(map[delivery.Kind]want{}, want{status: delivery.Settled, state: store.OutboundSent}, delivery.Kinds...),
		},
		{
			name: "outcome unknown past the cap, no status flowing: given up", tenantToken: token, tenantID: "acme",
			setup: func(e *env, key string) {
				e.sendingSince(key, "acme")
				e.clk.add(delivery.DefaultMaxUnknownWait + time.Minute)
			},
			want: givenUp(delivery.OutcomeUnknown, delivery.ReasonOutcomeUnknown, 0),
		},
		{
			name: "no token", tenantID: "acme",
			want: without(givenUp(delivery.Unsendable, delivery.ReasonNoToken, 0), delivery.DefaultReply),
		},
		{
			name: "tenant gone", tenantToken: token, tenantID: "ghost",
			want: without(givenUp(delivery.Unsendable, delivery.ReasonTenantNotFound, 0), delivery.DefaultReply),
		},
		{
			name: "131026: refused for good", tenantToken: token, tenantID: "acme",
			setup: func(e *env, _ string) { e.fake.FailNext(1, http.StatusBadRequest, 131026) },
			want:  givenUp(delivery.Refused, delivery.ReasonRefused, 1),
		},
		{
			name: "131050: the contact opted out, on purpose", tenantToken: token, tenantID: "acme",
			setup: func(e *env, _ string) { e.fake.FailNext(1, http.StatusBadRequest, delivery.CodeOptedOut) },
			want:  each(map[delivery.Kind]want{}, failed(delivery.ReasonOptedOut, false, 1), delivery.Kinds...),
		},
		{
			name: "retries exhausted: Meta's 5xx on the last attempt", tenantToken: token, tenantID: "acme", lastAttempt: true,
			setup: func(e *env, _ string) { e.fake.FailNext(1, http.StatusServiceUnavailable, 2) },
			want: each(each(map[delivery.Kind]want{},
				want{status: delivery.Retry, state: store.OutboundFailed, reason: delivery.ReasonRetriesExhausted, graphCalls: 1},
				append(stored, delivery.DefaultReply)...),
				want{status: delivery.Unsendable, state: store.OutboundFailed, reason: delivery.ReasonRetriesExhausted, recordDL: true, graphCalls: 1},
				replies...),
		},
		{
			name: "131047: Meta says the window closed", tenantToken: token, tenantID: "acme",
			setup: func(e *env, _ string) { e.fake.CloseWindow(contact, true) },
			want: each(map[delivery.Kind]want{
				delivery.DefaultReply: failed(delivery.ReasonOutsideWindow, false, 1),
				delivery.APISend:      failed(delivery.ReasonOutsideWindow, false, 1),
			}, sent(2), append(replies, delivery.ConsoleReply, delivery.ParkedRelease, delivery.Notification)...),
		},
		{
			name: "window closed before the send", tenantToken: token, tenantID: "acme", lastInbound: 48 * time.Hour,
			want: each(map[delivery.Kind]want{
				delivery.DefaultReply: sent(1),
				delivery.APISend:      failed(delivery.ReasonOutsideWindow, false, 0),
			}, sent(1), append(replies, delivery.ConsoleReply, delivery.ParkedRelease, delivery.Notification)...),
		},
		{
			name: "auth error", tenantToken: "EAArevoked", tenantID: "acme",
			want: each(map[delivery.Kind]want{}, parked, append(replies, stored...)...),
		},
		{
			name: "auth error, a newer token already set", tenantToken: token, tenantID: "acme",
			setup: func(e *env, _ string) { e.tenants.stale = true },
			want: each(each(map[delivery.Kind]want{}, want{status: delivery.Retry, state: store.OutboundPending, graphCalls: 1}, replies...),
				sent(2), stored...),
		},
	}
	// The single-tenant default has no tenant to park or mark: a token refusal fails the reply and
	// keeps the task as a dead letter; its token is the service's, never missing here. Its record
	// needs no tenant: the default's rows of the "tenant" cases are those of a tenant's send.
	defaultAuth := failed(delivery.ReasonRefused, true, 1)
	for _, tc := range tests {
		for _, kind := range delivery.Kinds {
			w, ok := tc.want[kind]
			if !ok && kind == delivery.DefaultReply && (tc.name == "auth error" || tc.name == "auth error, a newer token already set") {
				w, ok = defaultAuth, true
			}
			if !ok {
				continue
			}
			t.Run(tc.name+"/"+kind.String(), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, tc.tenantToken, time.Time{})
				e.d.Windows = windows{last: e.clk.now().Add(-tc.lastInbound)}
				tenantID := tc.tenantID
				if kind == delivery.DefaultReply {
					tenantID = ""
					if tc.name == "auth error" || tc.name == "auth error, a newer token already set" {
						e.fake.FailNext(1, http.StatusUnauthorized, 190)
					}
				}
				key := "k-" + kind.String()
				e.seed(kind, tenantID, key)
				if tc.setup != nil {
					tc.setup(e, key)
				}
				res := e.deliver(kind, tenantID, key, tc.lastAttempt)
				rec, err := e.out.GetOutbound(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				got := want{status: res.Status, state: rec.State, reason: rec.FailureReason, deadLetter: res.DeadLetter,
					recordDL: res.DeadLetterID != "", graphCalls: e.sendCalls()}
				if got != w {
					t.Errorf("%s: got %+v (result %+v), want %+v", kind, got, res, w)
				}
				checkEnd(t, e, kind, key, res, rec)
				if w.status == delivery.Parked {
					// Parked because the tenant was marked: its other sends park before Graph.
					tn, err := e.tenants.Get(context.Background(), "acme")
					if err != nil || tn.AuthStatus != store.AuthNeedsReauth {
						t.Errorf("tenant %s (%v), want needs_reauth", tn.AuthStatus, err)
					}
				}
			})
		}
	}
}
