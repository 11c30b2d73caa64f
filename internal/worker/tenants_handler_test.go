package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// fakeTenants is the tenant store, cache and token keeper at once: tokens are stored in clear
// as "sealed:<token>".
type fakeTenants struct {
	// Err makes every lookup fail (the store is down).
	Err error

	mu       sync.Mutex
	tenants  map[string]store.TenantRecord // by id
	numbers  map[string]string             // phone_number_id → tenant id
	members  map[string]tenant.Member      // tenant id + "/" + contact id
	invites  map[string]tenant.Role        // tenant id + "/" + code hash, unused
	redeemed []string
}

func newFakeTenants(tns ...store.TenantRecord) *fakeTenants {
	f := &fakeTenants{tenants: map[string]store.TenantRecord{}, numbers: map[string]string{},
		members: map[string]tenant.Member{}, invites: map[string]tenant.Role{}}
	for _, rec := range tns {
		f.tenants[rec.Tenant.ID] = rec
		for _, p := range rec.Tenant.PhoneNumbers {
			f.numbers[p.PhoneNumberID] = rec.Tenant.ID
		}
	}
	return f
}

func (f *fakeTenants) GetByPhoneNumber(_ context.Context, phoneNumberID string) (store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return store.TenantRecord{}, f.Err
	}
	id, ok := f.numbers[phoneNumberID]
	if !ok {
		return store.TenantRecord{}, store.ErrNotFound
	}
	return f.tenants[id], nil
}

func (f *fakeTenants) Tenant(_ context.Context, id string) (store.TenantRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return store.TenantRecord{}, f.Err
	}
	rec, ok := f.tenants[id]
	if !ok {
		return store.TenantRecord{}, store.ErrNotFound
	}
	return rec, nil
}

// Get is Tenant: fakeTenants is also a TenantReader.
func (f *fakeTenants) TokenRefused(store.TenantRecord) {}

func (f *fakeTenants) Get(ctx context.Context, id string) (store.TenantRecord, error) {
	return f.Tenant(ctx, id)
}

func (f *fakeTenants) Token(_ context.Context, rec store.TenantRecord) (string, error) {
	return strings.TrimPrefix(string(rec.AccessToken), "sealed:"), nil
}

// ActionSecret: the handler tests run no action.
func (f *fakeTenants) ActionSecret(context.Context, store.TenantRecord) ([]byte, error) {
	return nil, errors.New("fakeTenants: no action secrets")
}

func (f *fakeTenants) RuntimeMember(_ context.Context, id string, c store.Contact) (tenant.Member, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.members[id+"/"+c.ID]
	return m, ok, nil
}

func (f *fakeTenants) RedeemInvite(_ context.Context, id, codeHash string, c store.Contact, name string) (tenant.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	role, ok := f.invites[id+"/"+codeHash]
	if !ok {
		return tenant.Member{}, store.ErrInviteInvalid
	}
	delete(f.invites, id+"/"+codeHash)
	m := tenant.Member{WaID: c.WaID, UserID: c.UserID, Role: role, Name: name}
	f.members[id+"/"+c.ID] = m
	f.redeemed = append(f.redeemed, codeHash)
	return m, nil
}

func (f *fakeTenants) invite(id, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invites[id+"/"+tenant.InviteCodeHash(code)] = tenant.RoleMember
}

// fakeTenant is a tenant with one number and, unless token is empty, an access token.
func fakeTenant(id, number, lang string, audience tenant.Audience, token string, members ...tenant.Member) store.TenantRecord {
	tn := &tenant.Tenant{ID: id, Name: id, Language: lang, Audience: audience,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: number, WABAID: "waba-" + id}}, Members: members}
	tn.ApplyDefaults()
	rec := store.TenantRecord{Tenant: tn, AuthStatus: store.AuthNoToken}
	if token != "" {
		rec.AccessToken, rec.TokenSetAt, rec.AuthStatus = []byte("sealed:"+token), time.Now(), store.AuthOK
	}
	return rec
}

func TestInboundRoutesEachNumberToItsTenantQueue(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.tenants = newFakeTenants(fakeTenant("acme", "111", "en", tenant.AudiencePublic, "EAAacme"))
	for _, tc := range []struct{ number, wantQueue, wantTenant string }{
		{"111", "wa-out-acme", "acme"},
		{"999", tasks.OutboundQueueID, ""}, // no tenant: the single-tenant default
	} {
		payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: tc.number}, "hi")
		hs.run(tasks.ProcessInboundPath, inboundTask("evt-"+tc.number, payload), attempt{})
		qs := hs.queue.Tasks()
		task := qs[len(qs)-1]
		var out tasks.Outbound
		if err := json.Unmarshal(task.Body, &out); err != nil {
			t.Fatal(err)
		}
		if task.Queue != tc.wantQueue || out.TenantID != tc.wantTenant || out.PhoneNumberID != tc.number {
			t.Errorf("number %s: task on %s for tenant %q, want %s for %q", tc.number, task.Queue, out.TenantID, tc.wantQueue, tc.wantTenant)
		}
	}
}

func TestInboundUnroutedWithoutDefault(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.noDefault = true
	hs.tenants = newFakeTenants(fakeTenant("acme", "111", "en", tenant.AudiencePublic, "EAAacme"))
	payload := whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: "999"}, "hi")
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", payload), attempt{})
	hs.want(got, 200, map[string]any{"status": "ok", "messages": 1.0, "statuses": 0.0, "tasks_created": 0.0, "tasks_existed": 0.0, "unrouted": 1.0}, "unrouted_number")
	if n := len(hs.queue.Tasks()); n != 0 {
		t.Errorf("%d tasks for an unrouted number, want 0", n)
	}
	if !strings.Contains(hs.logs.String(), `"severity":"ERROR"`) || !strings.Contains(hs.logs.String(), `"phone_number_id":"999"`) {
		t.Errorf("unrouted_number not logged at ERROR with the business number:\n%s", hs.logs.String())
	}
}

func TestInboundStatusRecordsTenant(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.tenants = newFakeTenants(fakeTenant("acme", "111", "en", tenant.AudiencePublic, "EAAacme"))
	o := whatsapp.SampleOptions{PhoneNumberID: "111", MessageID: "wamid.out-1"}
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleStatus(o, "delivered")), attempt{})
	hs.want(got, 200, map[string]any{"status": "ok", "messages": 0.0, "statuses": 1.0, "tasks_created": 0.0, "tasks_existed": 0.0}, "status_applied")
	if len(hs.records.statuses) != 1 || hs.records.statuses[0].TenantID != "acme" {
		t.Errorf("status records %+v, want one for tenant acme", hs.records.statuses)
	}
	if n := len(hs.queue.Tasks()); n != 0 {
		t.Errorf("a status created %d tasks", n)
	}
}

func TestInboundTenantLookupFailsRetries(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	hs.tenants = newFakeTenants()
	hs.tenants.Err = errDown
	got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: "111"}, "hi")), attempt{})
	hs.want(got, 503, retryBody("temporary_failure"), "task_retry")
	if n := len(hs.queue.Tasks()); n != 0 {
		t.Errorf("%d tasks created without a route, want 0", n)
	}
	if diff := cmp.Diff([]string{"trace evt-1 " + store.TraceRetrying}, hs.records.Traces()); diff != "" {
		t.Errorf("trace (-want, +got):\n%s", diff)
	}
}

// tenantOutbound is the outbound task of a text from `from` to tenant's number.
func tenantOutbound(tenantID, number, from, text string) tasks.Outbound {
	id := whatsapp.NewMessageID()
	return tasks.Outbound{IdempotencyKey: tasks.IdempotencyKey(keyedid.Dev(), id), CorrelationID: "corr-1", InboundEventID: id,
		PhoneNumberID: number, To: from, TenantID: tenantID,
		Message: whatsapp.Message{ID: id, From: from, ContactName: "Marie", PhoneNumberID: number, Type: "text", Text: text}}
}

func TestOutboundWithoutTokenIsDeadLettered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		out     tasks.Outbound
		noDef   bool
		wantErr string
	}{
		{"default without WHATSAPP_ACCESS_TOKEN", tenantOutbound("", "999", "33612345678", "hi"), true, "no_token: reply for the single-tenant default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			hs.noDefault = tc.noDef
			hs.tenants = newFakeTenants(fakeTenant("acme", "111", "en", tenant.AudiencePublic, ""))
			got := hs.run(tasks.ProcessOutboundPath, tc.out, attempt{})
			if got.Code != 200 || got.Body["status"] != "dead_lettered" {
				t.Fatalf("answer %d %v, want 200 dead_lettered", got.Code, got.Body)
			}
			if mark := hs.records.Mark(tc.out.IdempotencyKey); !strings.HasPrefix(mark, "failed 0 ") || !strings.Contains(mark, tc.wantErr) {
				t.Errorf("record %q, want failed with %q", mark, tc.wantErr)
			}
			_, cause, _ := strings.Cut(tc.wantErr, ": ")
			if dls := hs.records.DeadLetters(); len(dls) != 1 || !strings.Contains(dls[0].LastError, cause) {
				t.Errorf("dead letters %+v", dls)
			}
			if n := len(hs.sender.Sends()); n != 0 {
				t.Errorf("%d sends, want 0", n)
			}
		})
	}
}
