package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// testClock is a clock a test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// TestListingAndWebhookStatuses: a status webhook recorded after a listing began wins over
// that listing; a listing begun after the webhook wins over it; a template a listing lacks is
// removed unless its status is newer than the listing; the records are the tenant's only.
func TestListingAndWebhookStatuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	clk := &testClock{t: t0}
	opts := store.Options{Now: clk.now}
	prefs, ts := store.NewContactPrefs(db, opts), store.NewTemplates(db, opts)
	listing := func(at time.Time, list ...store.Template) []store.Template {
		t.Helper()
		got, err := ts.RecordListing(ctx, "acme", at, list)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	status := func(name string) string {
		t.Helper()
		got, err := ts.Get(ctx, "acme", name, "en_US")
		if errors.Is(err, store.ErrNotFound) {
			return "absent"
		}
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	tpl := func(name, status string) store.Template {
		return store.Template{Name: name, Language: "en_US", Status: status, Category: "UTILITY", WABAID: "900", ID: "1" + name,
			Components: `[{"type":"BODY","text":"x"}]`}
	}

	listing(t0, tpl("order_ready", "PENDING"), tpl("old_promo", "APPROVED"))
	if s := status("order_ready"); s != "PENDING" {
		t.Fatalf("after the first listing: %s, want PENDING", s)
	}
	// The webhook approves it at t0+2m; a listing begun at t0+1m still says PENDING.
	clk.set(t0.Add(2 * time.Minute))
	if err := prefs.RecordTemplate(ctx, store.Template{TenantID: "acme", Name: "order_ready", Language: "en_US", Status: "APPROVED"}); err != nil {
		t.Fatal(err)
	}
	clk.set(t0.Add(3 * time.Minute))
	got := listing(t0.Add(time.Minute), tpl("order_ready", "PENDING"), tpl("old_promo", "APPROVED"))
	if got[0].Status != "APPROVED" || status("order_ready") != "APPROVED" {
		t.Errorf("an older listing undid the webhook: answered %s, stored %s, want APPROVED", got[0].Status, status("order_ready"))
	}
	if got[0].Components == "" || got[0].ID != "1order_ready" {
		t.Errorf("the listing's other fields were not kept beside the webhook's status: %+v", got[0])
	}
	// A webhook-only template (created meanwhile) newer than a listing survives that listing's
	// absence of it; old_promo, recorded before, is removed when a listing lacks it.
	clk.set(t0.Add(5 * time.Minute))
	if err := prefs.RecordTemplate(ctx, store.Template{TenantID: "acme", Name: "fresh", Language: "en_US", Status: "PENDING"}); err != nil {
		t.Fatal(err)
	}
	listing(t0.Add(4*time.Minute), tpl("order_ready", "APPROVED"))
	if s := status("old_promo"); s != "absent" {
		t.Errorf("a template the listing lacks: %s, want removed", s)
	}
	if s := status("fresh"); s != "PENDING" {
		t.Errorf("a template newer than the listing: %s, want kept PENDING", s)
	}
	// A listing begun after the webhook wins: Meta paused it since.
	listing(t0.Add(10*time.Minute), tpl("order_ready", "PAUSED"))
	if s := status("order_ready"); s != "PAUSED" {
		t.Errorf("a listing newer than the webhook: %s, want PAUSED", s)
	}
	if s := status("fresh"); s != "absent" {
		t.Errorf("a template older than a listing that lacks it: %s, want removed", s)
	}
	// Another tenant's listing touches nothing of acme's; Delete removes every language.
	if _, err := ts.RecordListing(ctx, "other", t0.Add(20*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if s := status("order_ready"); s != "PAUSED" {
		t.Errorf("another tenant's listing changed acme's template: %s", s)
	}
	if _, err := ts.RecordCreated(ctx, store.Template{TenantID: "acme", Name: "order_ready", Language: "fr", Status: "PENDING"}, t0.Add(21*time.Minute)); err != nil {
		t.Fatal(err)
	}
	list, err := ts.List(ctx, "acme")
	if err != nil || len(list) != 2 || list[0].Language != "en_US" || list[1].Language != "fr" {
		t.Fatalf("List: %+v %v, want order_ready en_US then fr", list, err)
	}
	if err := ts.Delete(ctx, "acme", "order_ready"); err != nil {
		t.Fatal(err)
	}
	if list, _ := ts.List(ctx, "acme"); len(list) != 0 {
		t.Errorf("after Delete: %+v, want none", list)
	}
}

func TestNotApproved(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]bool{"PENDING": true, "REJECTED": true, "PAUSED": true, "DISABLED": true,
		"APPROVED": false, "": false, "IN_APPEAL": false} {
		if got := store.NotApproved(status); got != want {
			t.Errorf("NotApproved(%q) = %v, want %v", status, got, want)
		}
	}
}
