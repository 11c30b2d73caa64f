package devstack_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
)

// TestConnectLinkEndToEnd runs issue 21's attacks on the connect link through the real services
// of the local stack (api, Meta's dialog and Graph as the fake, webhook, worker, Cloud Tasks,
// Firestore):
//
//	(a) acme's leaked link opened by an attacker whose Meta login grants only their own account:
//	    refused, nothing subscribed, acme unchanged, and a message to the attacker's number is
//	    not routed to acme;
//	(c) acme's admin logs in granting acme's account and another: the token is taken, the other
//	    account is not attached (its messages are not routed to acme) until the operator
//	    approves it, after which they are.
//
// Neither a link's state nor the dialog's state nor Meta's code (nor the new token or the app
// secret) reaches a log line or a span attribute. (Not parallel: the stack's tracing is process-wide.)
func TestConnectLinkEndToEnd(t *testing.T) {
	const (
		number, waba                 = "200000000000101", "300000000000001"
		extraNumber, extraWABA       = "200000000000201", "300000000000002"
		attackerNumber, attackerWABA = "900000000000011", "900000000000001"
	)
	host := testenv.FirestoreHost(t)
	_, project := testenv.Firestore(t)
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	logs := &testenv.LogBuffer{}
	file := fmt.Sprintf("id: acme\nname: Acme Travel\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: %q}\n", number, waba)
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t),
		Tenants: [][]byte{[]byte(file)},
		// No single-tenant default: a number no tenant owns is not answered at all.
		WorkerConfig: func(c *worker.Config) { c.AccessToken = "" },
		Logs:         func(string) io.Writer { return logs },
		SpanExporter: exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop) // Stop may run twice: the spans are read after the first
	ctx := context.Background()
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tenants := store.NewTenants(db, store.Options{})
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close()
	st.Graph.AddSignupAccount(waba, number)
	st.Graph.AddSignupAccount(extraWABA, extraNumber)
	st.Graph.AddSignupAccount(attackerWABA, attackerNumber)

	var secretValues []string
	connect := func(grant ...string) (int, string) {
		t.Helper()
		st.Graph.SetSignupGrant(grant...)
		link, _, err := signup.NewConnectLink(ctx, keeper, nil, st.APIURL, "acme", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		b := devstack.NewBrowser()
		status, page, err := b.Connect(link)
		if err != nil {
			t.Fatal(err)
		}
		secretValues = append(secretValues, strings.TrimPrefix(link[strings.Index(link, "?"):], "?state="))
		cb, err := url.Parse(b.Callback)
		if err != nil || cb.Query().Get("code") == "" {
			t.Fatalf("the dialog did not lead to the callback: %q", b.Callback)
		}
		secretValues = append(secretValues, cb.Query().Get("state"), cb.Query().Get("code"))
		return status, page
	}
	// message posts a customer's text to phoneNumberID through the webhook, waits until the worker
	// finds it unrouted, and returns the sends made from that number meanwhile.
	message := func(phoneNumberID string) []graphfake.Request {
		t.Helper()
		msgID := whatsapp.NewMessageID()
		post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: phoneNumberID, From: customerPhone, MessageID: msgID}, "hello"))
		ref := logging.DevHasher().Ref(msgID)
		testenv.Eventually(t, 20*time.Second, func() bool {
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `"event":"unrouted_number"`) && strings.Contains(l, `"event_ref":"`+ref+`"`) &&
					strings.Contains(l, `"phone_number_id":"`+phoneNumberID+`"`) {
					return true
				}
			}
			return false
		}, "the message to %s was not found unrouted", phoneNumberID)
		return sendsFrom(st.Graph, phoneNumberID)
	}
	// routedReply posts customer messages to phoneNumberID until one is answered (the worker
	// reads a tenant again TenantCacheTTL after a change) and returns the reply sends.
	routedReply := func(phoneNumberID string) []graphfake.Request {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{PhoneNumberID: phoneNumberID, From: customerPhone, MessageID: whatsapp.NewMessageID()}, "hello"))
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, _ = st.Graph.WaitForSends(wctx, len(st.Graph.Sends())+1)
			cancel()
			if sends := sendsFrom(st.Graph, phoneNumberID); len(sends) > 0 {
				return sends
			}
		}
		t.Fatalf("no reply from %s", phoneNumberID)
		return nil
	}

	before, err := tenants.Get(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}

	// (a) The leaked link, opened by the attacker.
	status, page := connect(attackerWABA)
	if status != http.StatusForbidden || !strings.Contains(page, "Nothing was changed") {
		t.Fatalf("attacker's login: %d %s", status, page)
	}
	after, _ := tenants.Get(ctx, "acme")
	if string(after.AccessToken) != string(before.AccessToken) || len(after.Tenant.PhoneNumbers) != 1 || st.Graph.SubscribeCalls() != 0 {
		t.Fatalf("the attacker's login changed acme (%d numbers) or subscribed (%d calls)", len(after.Tenant.PhoneNumbers), st.Graph.SubscribeCalls())
	}
	if sends := message(attackerNumber); len(sends) != 0 {
		t.Fatalf("a message to the attacker's number was answered: %d sends", len(sends))
	}

	// (c) acme's admin shares acme's account and another.
	status, page = connect(waba, extraWABA)
	if status != http.StatusOK || !strings.Contains(page, "operator must approve") {
		t.Fatalf("admin's login: %d %s", status, page)
	}
	if sends := message(extraNumber); len(sends) != 0 {
		t.Fatalf("a message to the unapproved account's number was answered: %d sends", len(sends))
	}
	if !st.Graph.Subscribed(waba) || st.Graph.Subscribed(extraWABA) {
		t.Fatalf("subscribed: acme's %v, extra %v", st.Graph.Subscribed(waba), st.Graph.Subscribed(extraWABA))
	}
	// The operator approves: the account is subscribed and its number served as acme's.
	approver := &operator.WABAApprover{Store: tenants, Opener: keeper, GraphURL: st.GraphURL}
	rep, err := approver.Approve(ctx, "acme", extraWABA)
	if err != nil || len(rep.Added) != 1 || rep.Added[0] != extraNumber || rep.Granted.IsZero() {
		t.Fatalf("approve: %+v %v", rep, err)
	}
	sends := routedReply(extraNumber)
	rec, _ := tenants.Get(ctx, "acme")
	token, err := keeper.Decrypt(ctx, rec.AccessToken, secrets.AD("acme", secrets.PurposeAccessToken))
	if err != nil || sends[0].Token != string(token) || !st.Graph.Subscribed(extraWABA) {
		t.Fatalf("the approved number's reply went with token %.8s…, want acme's new one (%v)", sends[0].Token, err)
	}

	// The new token and the app secret must not show either.
	secretValues = append(secretValues, string(token), st.AppSecret)
	st.Stop() // flushes the spans
	all := logs.String()
	for _, v := range secretValues {
		if v == "" {
			t.Fatal("a secret was not captured")
		}
		if strings.Contains(all, v) {
			t.Errorf("a log line holds a secret (%.12s…)", v)
		}
		for _, sp := range exp.GetSpans() {
			for _, a := range sp.Attributes {
				if strings.Contains(a.Value.Emit(), v) {
					t.Errorf("span %q attribute %s holds a secret (%.12s…)", sp.Name, a.Key, v)
				}
			}
		}
	}
	if len(exp.GetSpans()) == 0 {
		t.Error("no spans recorded: the span check saw nothing")
	}
}

// sendsFrom are the sends the fake accepted from phoneNumberID.
func sendsFrom(g *graphfake.Fake, phoneNumberID string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range g.Sends() {
		if r.PhoneNumberID == phoneNumberID {
			out = append(out, r)
		}
	}
	return out
}
