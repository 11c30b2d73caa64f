package devstack_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenants"
)

// postStatuses plays Meta's part: a "sent" status webhook for every send the Graph fake took,
// once each, until ctx ends.
func postStatuses(ctx context.Context, t *testing.T, st *devstack.Stack) {
	done := map[string]bool{}
	for ctx.Err() == nil {
		for _, s := range st.Graph.Sends() {
			if s.MessageID == "" || done[s.MessageID] {
				continue
			}
			key, _ := s.Body["biz_opaque_callback_data"].(string)
			to, _ := s.Body["to"].(string)
			body := whatsapp.SampleStatus(whatsapp.SampleOptions{PhoneNumberID: s.PhoneNumberID, MessageID: s.MessageID, From: to,
				BizOpaqueCallbackData: key}, "sent")
			if postOK(ctx, st, body) {
				done[s.MessageID] = true
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// postOK posts a signed webhook delivery and reports whether it was answered 200.
func postOK(ctx context.Context, st *devstack.Stack, body []byte) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, st.AppSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestMetaOutageRepliesResentAutomatically (issue 35, item 1): on the whole stack, Meta goes
// down the way real outages look, a gateway's 502 without Meta's error body, so that the
// worker cannot know whether its reply went out. One reply never reached Meta; another did,
// and only its answer was lost. The tenant's queue has two attempts, so both waits outlive
// their task and are held on their records. Once Meta is back, statuses flow for later
// replies: the reply Meta never took is sent again automatically (by the sweep, from its
// record) and the one it took is settled by its own status, never sent twice. Every contact
// gets exactly one reply, no dead letter is left, nobody ran `wapipe replay`.
func TestMetaOutageRepliesResentAutomatically(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, logs := startOutageStack(ctx, t)
	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	go postStatuses(ctx, t, st)

	const notTaken, taken, later = "6281200000001", "6281200000002", "6281200000003"
	ids := map[string]string{}
	message := func(phone string) {
		t.Helper()
		ids[phone] = whatsapp.NewMessageID()
		post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{From: phone, MessageID: ids[phone]}, "hello"))
	}
	attempted := func(phone string) func() bool {
		return func() bool {
			for _, r := range st.Graph.Requests() {
				if r.Kind == graphfake.KindSend && r.Body["to"] == phone {
					return true
				}
			}
			return false
		}
	}
	// Meta down: a gateway's 502 before the send reached Meta, then one after Meta took it.
	st.Graph.FailWith(1, graphfake.Failure{Kind: graphfake.KindSend, Gateway: true})
	message(notTaken)
	testenv.Eventually(t, 30*time.Second, attempted(notTaken), "no reply attempted to the first contact")
	st.Graph.FailWith(1, graphfake.Failure{Kind: graphfake.KindSend, Gateway: true, Taken: true})
	message(taken)
	testenv.Eventually(t, 30*time.Second, attempted(taken), "no reply attempted to the second contact")
	// Meta back: the next reply goes out and its status flows.
	message(later)

	out := store.NewOutbound(db, store.Options{})
	key := func(phone string) string { return tasks.IdempotencyKey(keyedid.Dev(), ids[phone]) }
	testenv.Eventually(t, 60*time.Second, func() bool {
		for _, phone := range []string{notTaken, taken, later} {
			rec, err := out.GetOutbound(ctx, key(phone))
			if err != nil || rec.State != store.OutboundSent || rec.OutcomeHeld {
				return false
			}
		}
		return true
	}, "the three replies never all settled sent")
	sends := map[string]int{}
	for _, s := range st.Graph.Sends() {
		if to, _ := s.Body["to"].(string); to != "" {
			sends[to]++
		}
	}
	for _, phone := range []string{notTaken, taken, later} {
		if sends[phone] != 1 {
			t.Errorf("contact %s got %d replies, want exactly 1 (sends: %v)", phone[len(phone)-1:], sends[phone], sends)
		}
	}
	if rec, _ := out.GetOutbound(ctx, key(notTaken)); rec.UnknownResends != 1 {
		t.Errorf("the reply Meta never took: unknown_resends %d, want 1", rec.UnknownResends)
	}
	if rec, _ := out.GetOutbound(ctx, key(taken)); rec.UnknownResends != 0 || !rec.Reconciled {
		t.Errorf("the reply Meta took: unknown_resends %d, reconciled %v; want settled by its status alone", rec.UnknownResends, rec.Reconciled)
	}
	for _, event := range []string{"outbound_outcome_held", "outbound_unknown_resent", "outbound_swept"} {
		if !logs.Has(event) {
			t.Errorf("no %s log line", event)
		}
	}
	dls, err := store.NewDeadLetters(db, store.Options{}).ListDeadLetters(ctx, true, 10)
	if err != nil || len(dls) != 0 {
		t.Errorf("dead letters %+v (%v), want none", dls, err)
	}
}

// TestHeldConfirmationStillConfirms (issue 35, item 1): a confirmation prompt whose send met a
// gateway's 502 (Meta never took it) outlives its task, is held on its record and sent by the
// sweep once statuses flow again: the conversation's turn recorded no Graph id for it, yet the
// tap on the prompt the user got confirms, and the action runs once (not "expired").
func TestHeldConfirmationStillConfirms(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, logs := startOutageStack(ctx, t)
	go postStatuses(ctx, t, st)

	const owner, other = "16505551234", "6281200000009" // the sample tenant's owner may book
	prompts := func() []graphfake.Request {
		var out []graphfake.Request
		for _, s := range st.Graph.Sends() {
			if s.Body["to"] == owner && s.Body["type"] == "interactive" {
				out = append(out, s)
			}
		}
		return out
	}
	st.Graph.FailWith(1, graphfake.Failure{Kind: graphfake.KindSend, Gateway: true})
	post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{From: owner, MessageID: whatsapp.NewMessageID()},
		"book bus 01 for Pak Agus on 1 March, 15 million"))
	testenv.Eventually(t, 30*time.Second, func() bool { return logs.Has("outbound_outcome_held") },
		"the prompt's wait was never held on its record")
	// Meta is back: another contact's reply goes out and its status flows, the evidence.
	post(t, st, whatsapp.SampleText(whatsapp.SampleOptions{From: other, MessageID: whatsapp.NewMessageID()}, "hello"))
	testenv.Eventually(t, 90*time.Second, func() bool { return len(prompts()) == 1 }, "the held prompt was never sent")

	tap := whatsapp.SampleOptions{From: owner, MessageID: whatsapp.NewMessageID(), ContextID: prompts()[0].MessageID}
	post(t, st, whatsapp.SampleButtonReply(tap, "confirm_yes", "Yes"))
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	calls, err := st.Action.WaitForCalls(wctx, 1)
	if err != nil || len(calls) != 1 || calls[0].Intent != "create_booking" {
		t.Fatalf("the tap on the resent prompt made calls %+v (%v), want one create_booking", calls, err)
	}
	if n := len(prompts()); n != 1 {
		t.Errorf("%d prompts sent, want 1", n)
	}
}

// startOutageStack is the whole stack with the sample tenant for the outage tests: the tenant's
// queue has two attempts (so a wait outlives its task and is held on its record), the sweep runs
// every 300 ms and the reconcile window is 5 s. Its logs are returned.
func startOutageStack(ctx context.Context, t *testing.T) (*devstack.Stack, *testenv.LogBuffer) {
	t.Helper()
	_, project := testenv.Firestore(t)
	queues := testenv.FastQueues(t)
	tpl := queues.Templates[tasks.TenantOutboundTemplate]
	tpl.RetryConfig.MaxAttempts = 2
	queues.Templates[tasks.TenantOutboundTemplate] = tpl
	logs := &testenv.LogBuffer{}
	st, err := devstack.Start(ctx, devstack.Options{
		FirestoreHost: testenv.FirestoreHost(t), Project: project, Queues: queues, Tenants: [][]byte{tenants.Sample()},
		Logs: func(string) io.Writer { return logs }, SweepEvery: 300 * time.Millisecond,
		WorkerConfig: func(c *worker.Config) { c.ReconcileWindow = 5 * time.Second },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	return st, logs
}
