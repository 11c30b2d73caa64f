package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/usage"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/pricing"
	"github.com/wapipe/wapipe/tasks"
)

// TestUsageCountsEachPricedMessageOnce replays Meta's statuses with pricing through the real
// webhook, the Cloud Tasks emulator and the worker, as Meta sends them: several statuses per
// message, each carrying its pricing, out of order, one delivery twice, free and charged types,
// two markets (Indonesia by phone, India by phone), and one message whose statuses straddle the
// end of a month (counted in the month of its earliest status, whichever arrives first). GET
// /v1/usage then equals the figures computed by hand from pricing/meta_rates.csv, to the cent:
//
//	Indonesia marketing 0.0411, India utility 0.0014; free (not counted): India marketing
//	free_entry_point, Indonesia service → this month: 0.0425 (total 0.04); the month
//	before: one India utility, 0.0014.
//
// A bad or future month is 400 invalid_request.
func TestUsageCountsEachPricedMessageOnce(t *testing.T) {
	t.Parallel()
	a := startAPIStack(t, "acme-bus", isoTenant("acme-bus", isoNumberA))
	st := a.st
	const indonesia, india = "6281234567890", "919812345678"
	send := func(to, idem string) store.OutboundRecord { t.Helper(); return a.sendTemplate(t, to, idem) }
	now := time.Now().UTC()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	day := monthStart.Add(36 * time.Hour) // the 2nd, 12:00 UTC
	status := func(rec store.OutboundRecord, s, category, typ string, at time.Time) {
		t.Helper()
		post(t, st, whatsapp.SamplePricedStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: rec.To,
			MessageID: rec.GraphMessageID, BizOpaqueCallbackData: rec.IdempotencyKey, Timestamp: at}, s, category, typ))
	}
	promo := send(indonesia, "promo-1")
	status(promo, "sent", "marketing", "regular", day)
	status(promo, "delivered", "marketing", "regular", day.Add(time.Second))
	status(promo, "read", "marketing", "regular", day.Add(time.Minute))
	// The same delivery twice (Meta redelivers): the webhook's marker drops the second.
	status(promo, "read", "marketing", "regular", day.Add(time.Minute))
	ticket := send(india, "ticket-1")
	status(ticket, "delivered", "utility", "regular", day.Add(2*time.Second))
	status(ticket, "sent", "utility", "regular", day)
	entry := send(india, "entry-1")
	status(entry, "sent", "marketing", "free_entry_point", day)
	status(entry, "delivered", "marketing", "free_entry_point", day.Add(time.Second))
	reply := send(indonesia, "reply-1")
	status(reply, "sent", "service", "free_customer_service", day)
	// A message sent in the last second of the month before: its delivered status (this month)
	// arrives first, then its sent status (last month), which moves it.
	late := send(india, "late-1")
	status(late, "delivered", "utility", "regular", monthStart.Add(5*time.Second))
	status(late, "sent", "utility", "regular", monthStart.Add(-2*time.Second))

	month, prev := monthStart.Format("2006-01"), monthStart.Add(-time.Hour).Format("2006-01")
	get := func(q string) (int, []byte) { return a.get(t, "/v1/usage"+q) }
	none := "0.0000"
	want := usage.Report{Month: month, Currency: "USD",
		Meta: usage.MetaReport{ByCategory: map[string]usage.CategoryReport{
			"marketing": {Messages: 1, Amount: "0.0411"},
			"utility":   {Messages: 1, Amount: "0.0014"},
		}, Amount: "0.0425"},
		LLM:   usage.LLMReport{Amount: none},
		Total: "0.04",
		Days:  map[string]usage.DayReport{"02": {Meta: "0.0425", LLM: none}},
	}
	var got usage.Report
	testenv.Eventually(t, 30*time.Second, func() bool {
		code, b := get("?month=" + month)
		got = usage.Report{}
		return code == http.StatusOK && json.Unmarshal(b, &got) == nil && cmp.Equal(want, got)
	}, "GET /v1/usage never showed the hand-computed month")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the month (-want, +got):\n%s", diff)
	}
	wantPrev := usage.Report{Month: prev, Currency: "USD",
		Meta: usage.MetaReport{ByCategory: map[string]usage.CategoryReport{"utility": {Messages: 1, Amount: "0.0014"}}, Amount: "0.0014"},
		LLM:  usage.LLMReport{Amount: none}, Total: "0.00",
		Days: map[string]usage.DayReport{monthStart.Add(-time.Hour).Format("02"): {Meta: "0.0014", LLM: none}},
	}
	var gotPrev usage.Report
	testenv.Eventually(t, 30*time.Second, func() bool {
		code, b := get("?month=" + prev)
		gotPrev = usage.Report{}
		return code == http.StatusOK && json.Unmarshal(b, &gotPrev) == nil && cmp.Equal(wantPrev, gotPrev)
	}, "GET /v1/usage never showed the month before")
	// Both months at once: the late message is in one of them only.
	got = usage.Report{}
	if code, b := get("?month=" + month); code != http.StatusOK || json.Unmarshal(b, &got) != nil {
		t.Fatalf("the month again: %d %s", code, b)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the month after the month before settled (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPrev, gotPrev); diff != "" {
		t.Errorf("the month before (-want, +got):\n%s", diff)
	}
	for _, q := range []string{"?month=2026-13", "?month=26-11", "?month=" + monthStart.AddDate(0, 1, 0).Format("2006-01")} {
		if code, b := get(q); code != http.StatusBadRequest || !bytes.Contains(b, []byte(`"invalid_request"`)) {
			t.Errorf("GET /v1/usage%s: %d %s, want 400 invalid_request", q, code, b)
		}
	}
}

// TestBudgetWarningOnceUnderConcurrentStatuses: a tenant with a budget of 0.01 USD whose owner is
// in a conversation receives seven priced messages' statuses at once (India utility, 0.0014
// each: 0.0098 in all, so the sixth and seventh both find the month past 80 % and neither past
// 100 %). The owner gets the 80 % notice exactly once, in the tenant's language, naming the
// figures; the operator's budget_threshold line is logged once; nothing says 100 %. Two more of
// the business's own sends then take the month past the budget: both go, the one sent past it is
// marked over budget in the usage, and the owner is told, once, that the budget is spent.
func TestBudgetThresholdsOnceUnderConcurrentStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const owner, india = "6281100000001", "919800000001"
	file := fmt.Sprintf("id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: public\nbudget: {monthly_usd: \"0.01\"}\n"+
		"phone_numbers:\n  - {phone_number_id: %q, waba_id: \"400000000000001\"}\nmembers:\n  - {wa_id: %q, role: owner}\n", isoNumberA, owner)
	a := startAPIStack(t, "acme-bus", []byte(file))
	st, db, logs := a.st, a.db, a.logs
	e := &eventsStack{st: st, db: db}
	// The owner writes: their 24-hour window is open, and the ack answers.
	post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: owner, MessageID: "wamid.owner-hi"}, "halo"))
	testenv.Eventually(t, 20*time.Second, func() bool { return len(sendsTo(st.Graph, owner)) == 1 }, "the owner's message was not answered")
	var recs []store.OutboundRecord
	for i := range 7 {
		recs = append(recs, a.sendTemplate(t, india, fmt.Sprintf("ticket-%d", i)))
	}
	at := time.Now().Add(-time.Minute)
	var wg sync.WaitGroup
	for _, rec := range recs {
		wg.Go(func() {
			post(t, st, whatsapp.SamplePricedStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: india,
				MessageID: rec.GraphMessageID, BizOpaqueCallbackData: rec.IdempotencyKey, Timestamp: at}, "delivered", "utility", "regular"))
		})
	}
	wg.Wait()
	guard := store.NewGuard(db, store.Options{})
	testenv.Eventually(t, 30*time.Second, func() bool {
		spent, err := guard.Spent(ctx, "acme-bus", at.UTC().Format("2006-01"))
		return err == nil && spent == 7*1_400_000_000
	}, "the seven messages were never counted")
	e.idle(t)
	want := i18n.Text("id", i18n.BudgetWarning, "business", "Acme Bus", "spent", "0.01", "budget", "0.01")
	var notices []string
	for _, r := range sendsTo(st.Graph, owner)[1:] {
		notices = append(notices, sentText(r))
	}
	if len(notices) != 1 || !strings.HasPrefix(notices[0], "Acme Bus telah memakai 80%") {
		t.Errorf("the owner's notices: %q, want exactly one like %q", notices, want)
	}
	if n := strings.Count(logs.String(), `"event":"budget_threshold"`); n != 1 {
		t.Errorf("%d budget_threshold lines, want 1", n)
	}
	if strings.Contains(logs.String(), `"percent":100`) {
		t.Error("a 100 % threshold was told below the budget")
	}

	// Past the budget: the business's own sends still go; the one sent once the month was past
	// it is marked over budget, and the owner is told the budget is spent, once.
	period := at.UTC().Format("2006-01")
	for i := 7; i < 9; i++ {
		rec := a.sendTemplate(t, india, fmt.Sprintf("ticket-%d", i))
		post(t, st, whatsapp.SamplePricedStatus(whatsapp.SampleOptions{PhoneNumberID: isoNumberA, From: india,
			MessageID: rec.GraphMessageID, BizOpaqueCallbackData: rec.IdempotencyKey, Timestamp: at}, "delivered", "utility", "regular"))
		testenv.Eventually(t, 30*time.Second, func() bool {
			spent, err := guard.Spent(ctx, "acme-bus", period)
			return err == nil && spent == pricing.Amount(i+1)*1_400_000_000
		}, "ticket %d was never counted", i)
	}
	e.idle(t)
	code, b := a.get(t, "/v1/usage?month="+period)
	var rep usage.Report
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("GET /v1/usage: %d %s", code, b)
	}
	if rep.OverBudget == nil || *rep.OverBudget != (usage.CategoryReport{Messages: 1, Amount: "0.0014"}) || rep.Remaining == nil || *rep.Remaining != "-0.0026" {
		t.Errorf("the month past its budget: over_budget %+v, remaining %v; want one message of 0.0014 marked, -0.0026 left", rep.OverBudget, rep.Remaining)
	}
	notices = notices[:0]
	for _, r := range sendsTo(st.Graph, owner)[1:] {
		notices = append(notices, sentText(r))
	}
	if len(notices) != 2 || !strings.HasPrefix(notices[1], "Acme Bus telah memakai seluruh anggaran") {
		t.Errorf("the owner's notices: %q, want the 80 %% one, then the 100 %% one", notices)
	}
}

// apiStack is the whole stack with tenant files, a store on its emulator and an API key of one
// tenant: what a test of the api's sends and their statuses needs.
type apiStack struct {
	st   *devstack.Stack
	db   *store.DB
	key  string
	logs *testenv.LogBuffer
}

// startAPIStack starts the stack with files and makes an API key of tenantID.
func startAPIStack(t *testing.T, tenantID string, files ...[]byte) *apiStack {
	t.Helper()
	ctx := context.Background()
	_, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: testenv.FirestoreHost(t), Project: project, Queues: testenv.FastQueues(t),
		Tenants: files, Logs: func(string) io.Writer { return logs },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, keyID, hash, _ := apikey.New()
	if err := store.NewAPIKeys(db, store.Options{}).CreateAPIKey(ctx, store.APIKeyRecord{ID: keyID, TenantID: tenantID, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return &apiStack{st: st, db: db, key: key, logs: logs}
}

// sendTemplate sends hello_world to to through POST /v1/messages with Idempotency-Key idem and
// returns its record once sent.
func (a *apiStack) sendTemplate(t *testing.T, to, idem string) store.OutboundRecord {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"to":%q,"type":"template","template":{"name":"hello_world","language":{"code":"en"}}}`, to))
	req, _ := http.NewRequest(http.MethodPost, a.st.APIURL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idem)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var accepted struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&accepted)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/messages: %d %v", resp.StatusCode, err)
	}
	outbound := store.NewOutbound(a.db, store.Options{})
	var rec store.OutboundRecord
	testenv.Eventually(t, 20*time.Second, func() bool {
		rec, err = outbound.GetOutbound(context.Background(), tasks.SendKey(accepted.ID))
		return err == nil && rec.State == store.OutboundSent
	}, "the message to send with %s was never sent", idem)
	return rec
}

// get answers a GET of path on the api with the key: its status and body.
func (a *apiStack) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.st.APIURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
