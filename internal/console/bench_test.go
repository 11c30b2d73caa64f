package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tenants"
)

// BenchmarkInboxRender renders a tenant's inbox pages, on the Firestore emulator, with 1,000
// conversations in the tenant: each iteration renders one page (50 conversations), going through
// every page in turn, and the benchmark reports the render latency's p50 and p95 in ms (the
// goal: p95 under 100 ms).
//
//	go test -run '^$' -bench BenchmarkInboxRender -benchtime 200x ./internal/console/
func BenchmarkInboxRender(b *testing.B) {
	testenv.FirestoreHost(b)
	ctx := context.Background()
	db, _ := testenv.Store(b)
	t, err := tenant.Parse(tenants.Sample())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.NewTenants(db, store.Options{}).Apply(ctx, t, false); err != nil {
		b.Fatal(err)
	}
	convs := store.NewConversationStore(db, store.Options{})
	const n = 1000
	seedConversations(b, convs, t, n)

	// The page tokens of every page, as the Next links carry them.
	afters := []string{""}
	for {
		p, err := convs.ListInbox(ctx, store.InboxQuery{TenantID: t.ID, Status: store.ConversationOpen,
			Limit: console.InboxPageSize, After: afters[len(afters)-1]})
		if err != nil {
			b.Fatal(err)
		}
		if p.Next == "" {
			break
		}
		afters = append(afters, p.Next)
	}
	if want := n / console.InboxPageSize; len(afters) != want {
		b.Fatalf("%d pages, want %d", len(afters), want)
	}

	h := console.NewServer(console.Deps{Tenants: store.NewTenants(db, store.Options{}), Conversations: convs,
		Audit: store.NewAudit(db, store.Options{}),
		// A dev operator on loopback, at httptest's host name.
		Identity: &identity.Authenticator{TrustLoopback: true}, Hosts: console.HostPolicy{Names: []string{"example.com"}}}).Routes()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		path := "/tenants/" + t.ID + "/inbox"
		if a := afters[i%len(afters)]; a != "" {
			path += "?status=open&after=" + a
		}
		i++
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "127.0.0.1:50123"
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		lat = append(lat, time.Since(start))
		if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "data-conversation=") != console.InboxPageSize {
			b.Fatalf("GET %s = %d with %d rows", path, rec.Code, strings.Count(rec.Body.String(), "data-conversation="))
		}
	}
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.95), "p95-ms")
}

// seedConversations creates n open conversations of t, their last inbound messages a minute
// apart, eight at a time.
func seedConversations(b *testing.B, convs *store.ConversationStore, t *tenant.Tenant, n int) {
	b.Helper()
	ctx := context.Background()
	phone := t.PhoneNumbers[0].PhoneNumberID
	base := time.Now().Add(-time.Duration(n) * time.Minute)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 8 {
		wg.Go(func() {
			for i := range work {
				contact, contactID := fmt.Sprintf("62812%08d", i), fmt.Sprintf("ct_seed%05d", i)
				// The store's default keyer (the dev key's) names the conversation after the
				// contact, as the worker does.
				id := store.ConversationID(keyedid.Dev(), t.ID, phone, contactID)
				_, _, err := convs.Acquire(ctx, id, "seed", time.Millisecond, &store.Touch{TenantID: t.ID, PhoneNumberID: phone,
					ContactID: contactID, Contact: contact, ContactName: fmt.Sprintf("Contact %d", i),
					InboundAt: base.Add(time.Duration(i) * time.Minute)})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("seed: %v", firstErr)
	}
}
