package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/identity/identitytest"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// In-package fakes of the console's dependencies. err, when set, makes every call fail.

var errBoom = errors.New("boom: firestore unavailable at 10.0.0.7 with token sk-internal")

type fakeHealth struct {
	rep health.Report
	err error
}

func (f *fakeHealth) Check(context.Context) (health.Report, error) { return f.rep, f.err }

type fakeSends struct {
	pts []store.SentPoint
	err error
}

func (f *fakeSends) SentSince(context.Context, time.Time, int) ([]store.SentPoint, error) {
	return f.pts, f.err
}

type fakeTenants struct {
	recs []store.TenantRecord
	err  error
}

func (f *fakeTenants) List(context.Context) ([]store.TenantRecord, error) { return f.recs, f.err }

func (f *fakeTenants) Get(_ context.Context, id string) (store.TenantRecord, error) {
	if f.err != nil {
		return store.TenantRecord{}, f.err
	}
	for _, r := range f.recs {
		if r.Tenant.ID == id {
			return r, nil
		}
	}
	return store.TenantRecord{}, store.ErrNotFound
}

type fakeUsage struct {
	n   map[string]int
	err error
}

func (f *fakeUsage) Usage(_ context.Context, id, _ string) (int, error) { return f.n[id], f.err }

func (f *fakeUsage) Tokens(context.Context, string, string) (store.TokenUsage, error) {
	return store.TokenUsage{}, f.err
}

func (f *fakeUsage) Ledger(_ context.Context, _, period string) (store.Ledger, error) {
	return store.Ledger{Period: period}, f.err
}

type fakeQueues struct {
	stats map[string]taskqueue.QueueStats
	err   error
}

func (f *fakeQueues) QueueStats(_ context.Context, q string) (taskqueue.QueueStats, error) {
	return f.stats[q], f.err
}

type fakeConversations struct {
	mu    sync.Mutex
	convs []store.Conversation
	msgs  map[string][]store.Message
	err   error
	// listed records the last query.
	listed store.InboxQuery
}

func (f *fakeConversations) ListInbox(_ context.Context, q store.InboxQuery) (store.ConversationPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed = q
	if f.err != nil {
		return store.ConversationPage{}, f.err
	}
	if q.After == "bad" {
		return store.ConversationPage{}, store.ErrBadPageToken
	}
	var p store.ConversationPage
	for _, c := range f.convs {
		if c.TenantID == q.TenantID && (q.Status == "" || c.Status == q.Status) && (q.AssignedTo == "" || c.AssignedTo == q.AssignedTo) {
			p.Conversations = append(p.Conversations, c)
		}
	}
	if len(p.Conversations) > q.Limit {
		p.Conversations, p.Next = p.Conversations[:q.Limit], "NEXTTOKEN"
	}
	return p, nil
}

func (f *fakeConversations) GetConversations(_ context.Context, ids []string) ([]store.Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Conversation
	for _, id := range ids {
		if c, err := f.find(id); err == nil {
			out = append(out, *c)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

func (f *fakeConversations) ConversationsByNamePrefix(_ context.Context, tenantID, prefix string, _ int) ([]store.Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Conversation
	for _, c := range f.convs {
		if c.TenantID == tenantID && strings.HasPrefix(c.ContactName, prefix) {
			out = append(out, c)
		}
	}
	return out, f.err
}

func (f *fakeConversations) ConversationIDsByTextPrefix(_ context.Context, prefix string, _ int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, msgs := range f.msgs {
		for _, m := range msgs {
			if strings.HasPrefix(m.Text, prefix) {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids, f.err
}

func (f *fakeConversations) find(id string) (*store.Conversation, error) {
	if f.err != nil {
		return nil, f.err
	}
	for i := range f.convs {
		if f.convs[i].ID == id {
			return &f.convs[i], nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeConversations) Get(_ context.Context, id string) (store.Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.find(id)
	if err != nil {
		return store.Conversation{}, err
	}
	return *c, nil
}

func (f *fakeConversations) ListLatestMessages(_ context.Context, id string, _ int) ([]store.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msgs[id], f.err
}

func (f *fakeConversations) AssignConversation(_ context.Context, id, op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.find(id)
	if err != nil {
		return err
	}
	c.AssignedTo = op
	return nil
}

func (f *fakeConversations) TakeOver(_ context.Context, id, by string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.find(id)
	if err != nil {
		return err
	}
	c.HumanAt, c.HumanBy = at, by
	return nil
}

func (f *fakeConversations) HandBack(_ context.Context, id, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.find(id)
	if err != nil {
		return err
	}
	c.HumanAt, c.HumanBy, c.HandedBackBy = time.Time{}, "", by
	return nil
}

func (f *fakeConversations) CloseConversation(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.find(id)
	if err != nil {
		return err
	}
	c.Status = store.ConversationClosed
	return nil
}

type fakeOutbound struct {
	recs map[string]store.OutboundRecord
	err  error
}

func (f *fakeOutbound) GetOutbounds(_ context.Context, keys []string) (map[string]store.OutboundRecord, error) {
	out := map[string]store.OutboundRecord{}
	for _, k := range keys {
		if r, ok := f.recs[k]; ok {
			out[k] = r
		}
	}
	return out, f.err
}

type fakeDeadLetters struct {
	list []store.DeadLetter
	err  error
}

func (f *fakeDeadLetters) ListDeadLetterPage(_ context.Context, q store.DeadLetterQuery) (store.DeadLetterPage, error) {
	if f.err != nil {
		return store.DeadLetterPage{}, f.err
	}
	var p store.DeadLetterPage
	for _, d := range f.list {
		if !q.OnlyPending || !d.Replayed {
			p.DeadLetters = append(p.DeadLetters, d)
		}
	}
	return p, nil
}

func (f *fakeDeadLetters) GetDeadLetter(_ context.Context, id string) (store.DeadLetter, error) {
	if f.err != nil {
		return store.DeadLetter{}, f.err
	}
	for _, d := range f.list {
		if d.ID == id {
			return d, nil
		}
	}
	return store.DeadLetter{}, store.ErrNotFound
}

type fakeReplayer struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeReplayer) Replay(_ context.Context, d store.DeadLetter, _ bool) (operator.ReplayResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, d.ID)
	if f.err != nil {
		return operator.ReplayResult{}, f.err
	}
	return operator.ReplayResult{DeadLetterID: d.ID, Task: "replay-" + d.ID, RecordState: store.OutboundFailed, Reopened: true}, nil
}

type fakeInspector struct {
	rep *operator.Report
	err error
}

func (f *fakeInspector) Inspect(_ context.Context, id string) (*operator.Report, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.rep == nil || (id != f.rep.InboundEventID && id != f.rep.Query) {
		return nil, operator.ErrNothingFound
	}
	return f.rep, nil
}

// fakeAudit is an in-memory audit log with the store's create-once semantics.
type fakeAudit struct {
	mu      sync.Mutex
	entries map[string]store.AuditEntry
	err     error
}

func (f *fakeAudit) Begin(_ context.Context, e store.AuditEntry) (bool, store.AuditEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, store.AuditEntry{}, f.err
	}
	if old, ok := f.entries[e.ID]; ok {
		return false, old, nil
	}
	e.State, e.CreatedAt = store.AuditStarted, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	f.entries[e.ID] = e
	return true, e, nil
}

func (f *fakeAudit) Finish(_ context.Context, id, state, result, msg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[id]
	e.State, e.Result, e.Error = state, result, msg
	f.entries[id] = e
	return nil
}

func (f *fakeAudit) Get(_ context.Context, id string) (store.AuditEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return store.AuditEntry{}, store.ErrNotFound
	}
	return e, nil
}

type fakeReplier struct {
	mu    sync.Mutex
	calls []ReplyRequest
	err   error
}

func (f *fakeReplier) Reply(_ context.Context, r ReplyRequest) (ReplyResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r)
	if f.err != nil {
		return ReplyResult{}, f.err
	}
	return ReplyResult{ID: "msg_1", Status: "queued"}, nil
}

// fakeContacts are the tenants' contacts, found by any identifier as store.Contacts finds
// them; their conversations are at the ids the store derives (store.ConversationID under the dev
// keyer) unless convs names another. err fails every call.
type fakeContacts struct {
	mu       sync.Mutex
	contacts []store.Contact
	// convs maps tenant/number/contact id to a conversation id other than the derived one.
	convs map[string]string
	err   error
}

func (f *fakeContacts) add(c store.Contact) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.contacts = append(f.contacts, c)
}

func (f *fakeContacts) Find(_ context.Context, tenantID string, id contact.Identity) (store.Contact, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Contact{}, false, f.err
	}
	for _, c := range f.contacts {
		if c.TenantID == tenantID && c.Matches(id) {
			return c, true, nil
		}
	}
	return store.Contact{}, false, nil
}

func (f *fakeContacts) Get(_ context.Context, tenantID, id string) (store.Contact, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.Contact{}, f.err
	}
	for _, c := range f.contacts {
		if c.TenantID == tenantID && c.ID == id {
			return c, nil
		}
	}
	return store.Contact{}, store.ErrNotFound
}

func (f *fakeContacts) ConversationOf(ctx context.Context, tenantID, number string, id contact.Identity) (string, bool, error) {
	c, ok, err := f.Find(ctx, tenantID, id)
	if err != nil || !ok {
		return "", false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if conv, ok := f.convs[tenantID+"/"+number+"/"+c.ID]; ok {
		return conv, true, nil
	}
	return store.ConversationID(keyedid.Dev(), tenantID, number, c.ID), true, nil
}

type fakeLinks struct{ link string }

func (f fakeLinks) ConnectLink(_ context.Context, id string) (string, error) {
	return f.link + "?state=" + id, nil
}

// Secrets the fixtures hold: no page may show any of them.
const (
	secretCiphertext = "CIPHERTEXT-OF-EAAG-SECRET-TOKEN"
	secretAuthError  = "Error validating access token" // shown: not a secret
)

var fixedNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func sampleTenant(id string, quota *int) *tenant.Tenant {
	return &tenant.Tenant{ID: id, Name: "Acme " + id, Language: "id", Audience: tenant.AudienceMembers,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "1065403522" + id[len(id)-2:], WABAID: "102290129340398"}},
		Members:      []tenant.Member{{WaID: "6281234567890", Role: tenant.RoleOwner, Name: "Pak Agus"}},
		Sending:      tenant.Sending{PerSecond: 20, MaxConcurrent: 2},
		Quota:        tenant.Quota{LLMCallsPerMonth: quota},
		Assistant:    tenant.Assistant{Mode: tenant.ModeLLM, Model: "gemini-2.5-flash", MinConfidence: 0.7, ActionURL: "https://ops.example.com/actions"}}
}

// fixture is a console over fakes filled with one of everything.
type fixture struct {
	deps     Deps
	health   *fakeHealth
	sends    *fakeSends
	tenants  *fakeTenants
	usage    *fakeUsage
	queues   *fakeQueues
	convs    *fakeConversations
	out      *fakeOutbound
	dls      *fakeDeadLetters
	replay   *fakeReplayer
	inspect  *fakeInspector
	audit    *fakeAudit
	replier  *fakeReplier
	contacts *fakeContacts
	// iap signs the operators' IAP assertions (f.as).
	iap     *identitytest.Issuer
	handler http.Handler
}

// testIAPAudience is the fixture's IAP_AUDIENCE.
const testIAPAudience = "/projects/123456789012/global/backendServices/4242"

// as returns the header of a valid IAP assertion for email, for get and post.
func (f *fixture) as(t *testing.T, email string) []string {
	return []string{identity.IAPHeader, f.iap.Sign(t, identitytest.Claims(identity.IAPIssuer, testIAPAudience, email))}
}

func newFixture(t *testing.T, empty bool) *fixture {
	t.Helper()
	f := &fixture{
		health:   &fakeHealth{rep: health.Report{Status: health.OK, Reason: "queues flowing, sends succeeding", CheckedAt: fixedNow, Queues: map[string]health.QueueStats{}}},
		sends:    &fakeSends{},
		tenants:  &fakeTenants{},
		usage:    &fakeUsage{n: map[string]int{}},
		queues:   &fakeQueues{stats: map[string]taskqueue.QueueStats{}},
		convs:    &fakeConversations{msgs: map[string][]store.Message{}},
		out:      &fakeOutbound{recs: map[string]store.OutboundRecord{}},
		dls:      &fakeDeadLetters{},
		replay:   &fakeReplayer{},
		inspect:  &fakeInspector{},
		audit:    &fakeAudit{entries: map[string]store.AuditEntry{}},
		replier:  &fakeReplier{},
		contacts: &fakeContacts{convs: map[string]string{}},
		iap:      identitytest.NewIssuer(t, jose.ES256),
	}
	if !empty {
		f.fill()
	}
	f.deps = Deps{Health: f.health, Sends: f.sends, Tenants: f.tenants, Usage: f.usage, Queues: f.queues,
		Conversations: f.convs, Outbound: f.out, DeadLetters: f.dls, Replayer: f.replay, Inspector: f.inspect,
		Actions:  fakeActions{"act_0": {ActionID: "act_0", State: store.ActionDone, HTTPStatus: 200, Attempts: 1, Reply: "Schedule sent"}},
		Contacts: f.contacts,
		Audit:    f.audit, Replier: f.replier, LinkMaker: fakeLinks{link: "http://127.0.0.1:9/integrations/meta/whatsapp/connect"},
		Now: func() time.Time { return fixedNow },
		// Requests come from loopback as in dev, for httptest's host; f.as gives an IAP operator.
		Identity: &identity.Authenticator{IAP: identity.NewIAPVerifier(testIAPAudience, f.iap.KeysURL), TrustLoopback: true},
		Hosts:    HostPolicy{Names: []string{"example.com"}}}
	f.handler = NewServer(f.deps).Routes()
	return f
}

func (f *fixture) rebuild() { f.handler = NewServer(f.deps).Routes() }

func (f *fixture) fill() {
	quota := 100
	f.health.rep = health.Report{Status: health.Failing, Reason: "queue wa-inbound is paused", CheckedAt: fixedNow,
		Queues: map[string]health.QueueStats{
			"wa-inbound":  {Tasks: 7, OldestTaskAgeS: 95, Paused: true},
			"wa-outbound": {Tasks: 0},
		},
		Outbound: health.OutboundCounts{Pending: 1, Failed: 2}, DeadLetters: 1,
		LastHour: health.LastHour{Sent: 40, Failed: 2, SuccessRate: 0.95, LatencyP50MS: 420, LatencyP95MS: 1800}}
	for i := range 40 {
		f.sends.pts = append(f.sends.pts, store.SentPoint{SentAt: fixedNow.Add(-time.Duration(i) * time.Minute), LatencyMS: int64(100 + 50*i)})
	}
	f.tenants.recs = []store.TenantRecord{
		{Tenant: sampleTenant("acme-01", &quota), AuthStatus: store.AuthNeedsReauth, AuthLastError: secretAuthError,
			AccessToken: []byte(secretCiphertext), TokenSetAt: fixedNow.Add(-48 * time.Hour), Version: 3},
		{Tenant: sampleTenant("acme-02", nil), AuthStatus: store.AuthOK, AccessToken: []byte(secretCiphertext), Version: 1},
	}
	f.usage.n["acme-01"] = 100
	f.usage.n["acme-02"] = 12
	f.queues.stats["wa-out-acme-01"] = taskqueue.QueueStats{Tasks: 4}
	conv := store.Conversation{ID: "conv_abc", TenantID: "acme-01", PhoneNumberID: "106540352201", Contact: "6281234567890",
		ContactName: "Pak Agus", Status: store.ConversationOpen, LastMessageAt: fixedNow.Add(-time.Minute),
		State: turnstate.State{Pending: &turnstate.PendingAction{ActionID: "act_1", Intent: "create_booking",
			Summary: "Book bus 7 for 2026-12-01?", Data: map[string]any{"bus": "7"}, ExpiresAt: fixedNow.Add(20 * time.Minute)}}}
	// Pak Agus's conversation is from before contacts (no contact id): his phone finds his
	// contact.
	f.contacts.add(store.Contact{ID: "ct_agus", TenantID: "acme-01", Identity: contact.Identity{WaID: "6281234567890", Name: "Pak Agus"}})
	f.contacts.add(store.Contact{ID: "ct_nine", TenantID: "acme-02", Identity: contact.Identity{WaID: "6281230000009"}})
	f.convs.convs = []store.Conversation{conv,
		{ID: "conv_old", TenantID: "acme-01", Contact: "6289999990000", Status: store.ConversationClosed, LastMessageAt: fixedNow.Add(-time.Hour)}}
	f.convs.msgs["conv_abc"] = []store.Message{
		{Direction: store.DirectionIn, MessageID: "wamid.in1", Type: "text", Text: "Book bus 7 please", Timestamp: fixedNow.Add(-3 * time.Minute).Unix(),
			Event: "pending_action", Replies: []store.Reply{{Index: 0, IdempotencyKey: "reply-k1", Body: "Book bus 7 for 2026-12-01?"}},
			ActionID: "act_0", Action: `{"action_id":"act_0","intent":"check_schedule"}`, EffectsDoneAt: fixedNow.Add(-2 * time.Minute)},
		{Direction: store.DirectionOut, MessageID: "console-k2", Type: "text", Text: "An operator here", Timestamp: fixedNow.Add(-time.Minute).Unix()},
	}
	f.out.recs["reply-k1"] = store.OutboundRecord{State: store.OutboundSent, DeliveryStatus: store.DeliveryRead, SentAt: fixedNow.Add(-2 * time.Minute)}
	f.out.recs["console-k2"] = store.OutboundRecord{State: store.OutboundFailed, LastErrorCode: 131047}
	f.dls.list = []store.DeadLetter{
		{ID: "dl1", Queue: "projects/p/locations/l/queues/wa-outbound", Path: "/internal/process_outbound",
			Body: `{"message":{"text":"PRIVATE CUSTOMER TEXT"}}`, LastError: "whatsapp permanent error", LastErrorCode: 131026,
			RetryCount: 4, IdempotencyKey: "reply-k9", CreatedAt: fixedNow.Add(-time.Hour)},
		{ID: "dl2", Path: "/internal/process_inbound", LastError: "old", Replayed: true, ReplayedAt: fixedNow.Add(-time.Minute)},
	}
	f.inspect.rep = &operator.Report{Query: "wamid.HBgLFOUND", InboundEventID: "wamid.HBgLFOUND", EventRef: "ev_1234",
		Messages: []operator.MessageReport{}, DeadLetters: []operator.DeadLetter{}}
}

// get serves a GET and returns the status and the body.
func (f *fixture) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = testLoopback
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// testLoopback is the fixture's client address: loopback, as a dev operator's browser.
const testLoopback = "127.0.0.1:50123"

// testCSRF is a well-formed token for the double-submit cookie.
var testCSRF = strings.Repeat("A", 43)

// post serves a form POST with the CSRF cookie and field set, and returns the recorder.
func (f *fixture) post(t *testing.T, path string, form url.Values, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	if form.Get(CSRFField) == "" {
		form.Set(CSRFField, testCSRF)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = testLoopback
	req.AddCookie(&http.Cookie{Name: CSRFCookie, Value: testCSRF})
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

// fakeActions are the actions records of the fixture, by action id.
type fakeActions map[string]store.ActionRecord

func (f fakeActions) ListByConversation(_ context.Context, _ string, _ int) ([]store.ActionRecord, error) {
	var out []store.ActionRecord
	for _, r := range f {
		out = append(out, r)
	}
	return out, nil
}
