package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/cloudtasksemu"
	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

// The chaos run. Its short form runs with every `go test ./...` (CI runs it on its own, with -v,
// so its figures show in the log); the long form:
//
//	go test ./cmd/wapipe -run 'TestChaos$' -chaos -chaos-n 2000 -v -timeout 30m
var (
	chaos            = flag.Bool("chaos", false, "TestChaos: the long form, -chaos-n messages (without it: the short form CI runs)")
	chaosMessages    = flag.Int("chaos-n", 2000, "TestChaos -chaos: inbound messages and api sends in all")
	chaosConcurrency = flag.Int("chaos-concurrency", 16, "TestChaos -chaos: deliveries in flight at once")
	chaosLogs        = flag.String("chaos-logs", "", "TestChaos: keep the services' logs in this directory")
)

const (
	chaosToken    = "chaos-internal-token-0123456789"
	chaosSecret   = "chaos-app-secret"
	chaosAccess   = devstack.DevAccessToken // the default number's token, and every tenant's
	chaosLocation = "us-central1"
	// chaosTenant is the assistant tenant (mode llm) and chaosNumber its number; the other
	// traffic goes to the default number, which no tenant owns (the single-tenant ack).
	chaosTenant = "chaos-bus"
	chaosNumber = "200000000000001"
)

// chaosPlan is how much traffic and chaos a run makes.
type chaosPlan struct {
	plain, bookings, apiSends, concurrency int
	// minChaos is how long the kills go on at least; outage how long Firestore is away; each
	// service is killed every killEvery to killEvery+killJitter; metaOutage how long the Graph
	// API answers only timeouts and gateway pages.
	minChaos, outage, killEvery, killJitter, metaOutage time.Duration
	// lastAttempts is how many conversation tasks, and how many send tasks, have their last
	// attempt killed (chaos_edges_test.go).
	lastAttempts int
}

func planChaos() chaosPlan {
	if !*chaos {
		// A few hundred messages under a handful of kills: well under three minutes on two
		// cores, in CI on every change.
		return chaosPlan{plain: 150, bookings: 30, apiSends: 40, concurrency: 8, minChaos: 15 * time.Second, outage: 3 * time.Second,
			killEvery: 3 * time.Second, killJitter: 4 * time.Second, metaOutage: 4 * time.Second, lastAttempts: 3}
	}
	n := *chaosMessages
	return chaosPlan{plain: n * 70 / 100, bookings: n * 10 / 100, apiSends: n * 10 / 100, concurrency: *chaosConcurrency,
		minChaos: 30 * time.Second, outage: 5 * time.Second, killEvery: 2 * time.Second, killJitter: 4 * time.Second,
		metaOutage: 10 * time.Second, lastAttempts: 10}
}

// chaosTenantFile is the assistant tenant: anyone may book (no roles), and each booking asks to
// confirm, then calls the business at actionURL.
func chaosTenantFile(actionURL string) []byte {
	return []byte(fmt.Sprintf(`id: %s
name: Chaos Bus
language: en
audience: public
phone_numbers:
  - {phone_number_id: "%s", waba_id: "200000000000009"}
sending: {per_second: 200, max_concurrent: 8}
assistant:
  mode: llm
  model: gemini-2.5-flash
  instructions: You book buses.
  min_confidence: 0.7
  action_url: %s
  intents:
    - name: create_booking
      description: a new booking of a bus for a client on a date
      fields: {client: string, date: date, route: string, bus: string, price: integer}
      required: [client, date, bus]
      confirm: true
`, chaosTenant, chaosNumber, actionURL))
}

// TestChaos runs the webhook, the worker and the api as processes against the emulators and
// makes three kinds of traffic at once: Meta's deliveries of plain messages to the default
// number (each from its own contact, redelivered until answered 200); contacts of an assistant
// tenant (mode llm, the Gemini fake) who each ask for a booking, wait for the prompt and tap
// confirm_yes, so their confirmation calls the business (the action fake); and a business
// sending templates through /v1/messages, each Idempotency-Key sent two or three times. Meanwhile
// the webhook, the worker and the api are each killed with SIGKILL and restarted at random
// moments; the Graph API fails 10 % of sends (a third of those after the send went through) and
// the business endpoint 10 % of calls (half of those after the action ran); Firestore goes away
// once. Meta's part is played too: every send the Graph API took is followed by its "sent"
// status. Sends of unknown outcome that no status settled are dead-lettered by the worker and
// replayed as an operator would (wapipe replay --all).
//
// At the end: every accepted message has exactly one reply; every booking contact got exactly
// the prompt and one result message, its confirmation made exactly one action, which the
// business ran once, and wapipe never called it again once its answer was recorded; every api
// key gave one message id and one Graph send; no dead letter waits and the worker's health is ok.
func TestChaos(t *testing.T) {
	p := planChaos()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	project := testenv.ProjectID(t) // skips under -short, fails in CI without the emulator
	dir := *chaosLogs
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildServices(t)

	fsProxy := newSwitchProxy(t, testenv.FirestoreHost(t))
	queues := chaosQueues()
	emu, err := cloudtasksemu.Start(ctx, cloudtasksemu.Options{Project: project, Location: chaosLocation, Queues: queues})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Stop)
	admin, err := taskqueue.NewAdmin(ctx, project, chaosLocation, emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	db, err := store.OpenEmulator(ctx, testenv.FirestoreHost(t), project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// The fakes, in this process: they are not killed.
	fake := graphfake.New(graphfake.WithToken(chaosAccess))
	// The worker's Graph client gives up after graph.DefaultTimeout: a hang past it is a timeout.
	outageG := &metaOutage{next: fake, hangFor: 20 * time.Second}
	graph := &flakyGraph{next: outageG, rate: 0.10}
	// lastAttempts (made once the worker's process is) hears of every send.
	var lastP atomic.Pointer[lastAttempts]
	graphSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sendWatch{next: graph, last: lastP.Load()}.ServeHTTP(w, r)
	}))
	t.Cleanup(graphSrv.Close)
	gemini := geminifake.New(geminifake.WithRules(geminifake.DefaultRules()...))
	geminiSrv := gemini.NewTestServer()
	t.Cleanup(geminiSrv.Close)
	business := actionfake.New(devstack.DevActionSecret, actionfake.WithDedupe())
	actions := &flakyAction{next: business, rate: 0.10}
	actionSrv := httptest.NewServer(actions)
	t.Cleanup(actionSrv.Close)

	// The assistant tenant and its API key, as an operator sets them up.
	if _, err := devstack.ApplyTenants(ctx, db, admin, queues, [][]byte{chaosTenantFile(actionSrv.URL + "/wapipe/actions")}); err != nil {
		t.Fatal(err)
	}
	creds := &operator.Credentials{Tenants: &operator.Tenants{Store: store.NewTenants(db, store.Options{})}, Keys: store.NewAPIKeys(db, store.Options{})}
	apiKey, err := creds.APIKey(ctx, chaosTenant)
	if err != nil {
		t.Fatal(err)
	}

	webhookPort, workerPort, apiPort := freePort(t), freePort(t), freePort(t)
	workerURL := fmt.Sprintf("http://127.0.0.1:%d", workerPort)
	// Tasks reach the worker through lastAttempts, which kills some last attempts.
	taskProxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { lastP.Load().ServeHTTP(w, r) }))
	t.Cleanup(taskProxy.Close)
	webhookURL := fmt.Sprintf("http://127.0.0.1:%d/webhooks/whatsapp", webhookPort)
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	env := []string{
		"APP_ENV=dev", "GOOGLE_CLOUD_PROJECT=" + project, "FIRESTORE_EMULATOR_HOST=" + fsProxy.Addr(),
		"CLOUD_TASKS_EMULATOR_HOST=" + emu.Addr(), "TASKS_LOCATION=" + chaosLocation,
		"INTERNAL_TASK_BASE_URL=" + taskProxy.URL, "INTERNAL_TASK_TOKEN=" + chaosToken,
		"INBOUND_TASK_QUEUE_NAME=" + tasks.InboundQueueID, "OUTBOUND_TASK_QUEUE_NAME=" + tasks.OutboundQueueID,
		"WHATSAPP_APP_SECRET=" + chaosSecret, "WHATSAPP_VERIFY_TOKEN=chaos-verify", "DEDUPE_FAIL_MODE=closed",
		"GRAPH_API_BASE_URL=" + graphSrv.URL + "/v24.0", "WHATSAPP_ACCESS_TOKEN=" + chaosAccess, "LOG_LEVEL=INFO",
		"PUBLIC_BASE_URL=" + apiURL,
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
	}
	webhookProc := &service{t: t, name: "webhook", bin: filepath.Join(bin, "webhook"), port: webhookPort, env: env, logDir: dir}
	workerProc := &service{t: t, name: "worker", bin: filepath.Join(bin, "worker"), port: workerPort,
		// A killed holder's conversation is taken over after CONVERSATION_LEASE: shorter than
		// the retries of the run's short backoffs (the Gemini fake answers at once).
		// Its queues are the run's (short backoffs: the sweep's staleness follows them); a send of
		// unknown outcome waits RECONCILE_WINDOW for its status before the evidence decides. The
		// kills and the outage delay a status by tens of seconds at times while later ones arrive:
		// a window shorter than that would resend a message Meta took (production's is 15 min).
		env: slices.Concat(env, []string{"LLM_BASE_URL=" + geminiSrv.URL, "CONVERSATION_LEASE=15s",
			"TASKS_QUEUES_FILE=" + writeQueues(t, dir, queues), "RECONCILE_WINDOW=60s"}), logDir: dir}
	last := newLastAttempts(t, workerURL, queues, workerProc, p.lastAttempts)
	lastP.Store(last)
	apiProc := &service{t: t, name: "api", bin: filepath.Join(bin, "api"), port: apiPort, env: env, logDir: dir}
	procs := []*service{webhookProc, workerProc, apiProc}
	for _, s := range procs {
		s.start()
		t.Cleanup(s.stop)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Meta's part: a "sent" status webhook for every send the Graph API took.
	meta := &metaStatuses{url: webhookURL, fake: fake}
	metaCtx, stopMeta := context.WithCancel(ctx)
	metaDone := make(chan struct{})
	go func() { defer close(metaDone); meta.run(metaCtx) }()

	// The chaos: kills at random moments, one Firestore outage.
	chaosCtx, stopChaos := context.WithCancel(ctx)
	var kills sync.WaitGroup
	var outage atomic.Bool
	for _, s := range procs {
		kills.Add(1)
		go func() {
			defer kills.Done()
			for {
				select {
				case <-chaosCtx.Done():
					return
				case <-time.After(p.killEvery + rand.N(p.killJitter)):
				}
				for deadline := time.Now().Add(10 * time.Second); s == workerProc && !last.quiet() && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				s.restart()
			}
		}()
	}
	kills.Add(1)
	go func() {
		defer kills.Done()
		select {
		case <-chaosCtx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		outage.Store(true)
		fsProxy.Down()
		time.Sleep(p.outage)
		fsProxy.Up()
	}()

	// Meta's outage, after the traffic has begun; Cloud Scheduler's sweep, every second.
	kills.Add(1)
	go func() { defer kills.Done(); outageG.run(chaosCtx, 6*time.Second, p.metaOutage) }()
	var swept atomic.Int64
	sweepCtx, stopSweeps := context.WithCancel(ctx)
	sweepsDone := make(chan struct{})
	go func() { defer close(sweepsDone); sweeps(sweepCtx, workerURL, time.Second, &swept) }()

	// The traffic, all three kinds at once.
	start := time.Now()
	plain := &deliveries{answers: map[int]int{}}
	booked := &bookings{}
	sends := &apiSends{ids: map[int][]string{}, answers: deliveries{answers: map[int]int{}}}
	var traffic sync.WaitGroup
	traffic.Add(3)
	go func() { defer traffic.Done(); deliverAll(ctx, webhookURL, p.plain, p.concurrency, plain) }()
	bk := &booker{url: webhookURL, fake: fake, number: chaosNumber, d: plain, b: booked, client: &http.Client{Timeout: 10 * time.Second}}
	go func() { defer traffic.Done(); bk.bookAll(ctx, p.bookings, max(2, p.concurrency/2)) }()
	go func() {
		defer traffic.Done()
		sendAll(ctx, apiURL, apiKey, p.apiSends, max(2, p.concurrency/2), apiProc, sends)
	}()
	traffic.Wait()
	sendPhase := time.Since(start)
	// The chaos goes on while the pipeline works through the backlog.
	time.Sleep(time.Until(start.Add(p.minChaos)))
	stopChaos()
	kills.Wait()
	last.stopped.Store(true)

	// What must be there at the end.
	wantReplies := map[string]bool{}
	for _, id := range plain.accepted {
		wantReplies[tasks.IdempotencyKey(keyedid.Dev(), id)] = true
	}
	queueIDs := []string{tasks.InboundQueueID, tasks.OutboundQueueID, tasks.TenantQueueID(chaosTenant)}
	drained := func() bool {
		for _, q := range queueIDs {
			st, err := admin.QueueStats(ctx, q)
			if err != nil || st.Tasks > 0 || st.InFlight > 0 {
				return false
			}
		}
		return true
	}
	// count tallies what reached Graph and the business.
	count := func() chaosCount {
		c := chaosCount{}
		replies := repliesByKey(fake)
		for k := range wantReplies {
			switch n := replies[k]; {
			case n == 0:
				c.missing = append(c.missing, "reply "+k)
			case n > 1:
				c.twice = append(c.twice, fmt.Sprintf("reply %s×%d", k, n))
			}
		}
		to := sendsTo(fake)
		for i := range int(booked.booked.Load()) {
			// The prompt and the one result message.
			switch n := to[bookingContact(i)]; {
			case n < 2:
				c.missing = append(c.missing, fmt.Sprintf("booking %d: %d messages of 2", i, n))
			case n > 2:
				c.twice = append(c.twice, fmt.Sprintf("booking %d: %d messages of 2", i, n))
			}
		}
		for i := range p.apiSends {
			switch n := to[apiContact(i)]; {
			case n == 0:
				c.missing = append(c.missing, fmt.Sprintf("api send %d", i))
			case n > 1:
				c.twice = append(c.twice, fmt.Sprintf("api send %d×%d", i, n))
			}
		}
		sort.Strings(c.missing)
		sort.Strings(c.twice)
		return c
	}
	// settle waits until nothing is missing and the queues are empty, or until the queues have
	// stayed empty for 150 s (what is missing then is missing for good: longer than the sweep
	// takes to find a send whose task is gone, 45 s with the run's backoffs, and a conversation
	// whose lease expired unreleased, its lease and a minute's grace, twice).
	settle := func() chaosCount {
		var emptySince time.Time
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			c := count()
			if !drained() {
				emptySince = time.Time{}
				continue
			}
			if emptySince.IsZero() {
				emptySince = time.Now()
			}
			if len(c.missing) == 0 || time.Since(emptySince) > 150*time.Second {
				break
			}
		}
		if !drained() {
			t.Error("the queues never drained")
		}
		return count()
	}
	deadLetters := store.NewDeadLetters(db, store.Options{})
	waiting := func() (int, map[string]int) {
		dls, err := deadLetters.ListDeadLetters(ctx, true, 1000)
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]int{}
		for _, d := range dls {
			reasons[d.Reason]++
		}
		return len(dls), reasons
	}

	c := settle()
	pendingBefore, reasonsBefore := waiting()
	replays, late := 0, 0
	for pending, _ := waiting(); pending > 0 && replays < 4; pending, _ = waiting() {
		// A send cut by a kill has an unknown outcome; when no status webhook settles it, the
		// worker dead-letters it rather than risk answering twice, and the operator replays (a
		// replayed task that meets a send still unsettled is dead-lettered again, failed, so
		// the next replay sends it).
		replays++
		var out, errb bytes.Buffer
		err := run(ctx, []string{"replay", "--all", "--base-url", workerURL, "--token", chaosToken,
			"--project", project, "--location", chaosLocation, "--tasks-emulator", emu.Addr()}, &out, &errb)
		t.Logf("wapipe replay --all (round %d): %v\n%s%s", replays, err, lastLine(out.String()), errb.String())
		c = settle()
		if n := bk.confirmLate(ctx); n > 0 {
			// Prompts that came with the replay: their contacts confirm now.
			late += n
			c = settle()
		}
	}
	if n := bk.confirmLate(ctx); n > 0 { // prompts that came late without a replay
		late += n
		c = settle()
	}
	stopMeta()
	<-metaDone
	stopSweeps()
	<-sweepsDone
	pending, reasons := waiting()
	edges := workerEvents(t, dir, "outbound_unknown_resent", "outbound_outcome_held", "outbound_swept")
	health, herr := operator.FetchHealth(ctx, http.DefaultClient, workerURL, chaosToken)

	// The actions: one per confirmation, run once by the business, never called again by
	// wapipe once its answer was recorded.
	act := checkActions(ctx, t, db, business, int(booked.confirmed.Load()))
	// The api: one message id per key.
	keyProblems := 0
	for i, ids := range sends.ids {
		for _, id := range ids {
			if id == "" || id != ids[0] {
				keyProblems++
				t.Errorf("api send %d: its key gave the ids %v, want one", i, ids)
				break
			}
		}
	}

	t.Logf(`chaos run (%s form): %d plain messages, %d bookings, %d api sends, concurrency %d; traffic phase %s, run %s
  kills: webhook %d, worker %d, api %d; Firestore outage %s: %v; last attempts killed %d
  Meta outage %s (%v): %d sends hung past the timeout, %d got a gateway's 502, %d of them taken by Meta
  edges: %d unknown outcomes resent automatically, %d waits held on their record, %d records sent by the sweep; %d sweeps
  webhook deliveries: %d POSTs, answers %s, transport errors %d
  api: %d POSTs for %d keys (%d keys sent across an api kill), answers %s, transport errors %d
  Graph API: %d sends failed on purpose (%d after the send went through), %d sends taken; %d "sent" statuses posted
  business endpoint: %d calls failed on purpose (%d after the action ran); %s
  bookings: %d asked, %d prompted, %d confirmed (%d after a replay brought the prompt)
  dead letters before replay: %d %v (outcome unknown: %d); replay rounds %d; after: %d %v; health %s %s (%v)`,
		map[bool]string{true: "long", false: "short"}[*chaos], p.plain, p.bookings, p.apiSends, p.concurrency,
		sendPhase.Round(time.Second), time.Since(start).Round(time.Second),
		webhookProc.kills.Load(), workerProc.kills.Load(), apiProc.kills.Load(), p.outage, outage.Load(), last.kills.Load(),
		p.metaOutage, outageG.done.Load(), outageG.hangs.Load(), outageG.pages.Load(), outageG.taken.Load(),
		edges["outbound_unknown_resent"], edges["outbound_outcome_held"], edges["outbound_swept"], swept.Load(),
		plain.posts.Load(), plain.codes(), plain.transport.Load(),
		sends.answers.posts.Load(), p.apiSends, sends.acrossKill.Load(), sends.answers.codes(), sends.answers.transport.Load(),
		graph.failed.Load(), graph.lost.Load(), len(fake.Sends()), meta.posted.Load(),
		actions.failed.Load(), actions.lost.Load(), act,
		booked.booked.Load(), booked.prompted.Load(), booked.confirmed.Load(), late,
		pendingBefore, reasonsBefore, reasonsBefore["outcome_unknown"], replays, pending, reasons, health.Status, health.Reason, herr)
	summary := fmt.Sprintf("CHAOS %s: replies %d/%d, bookings %d/%d, actions %d (recalled after recorded answer %d), api sends %d/%d; lost %d, duplicated %d; unknown outcomes resent automatically %d; dead letters before replay %d, after %d; kills %d/%d/%d, last attempts %d",
		map[bool]string{true: "long", false: "short"}[*chaos],
		len(wantReplies)-countPrefix(c.missing, "reply")-countPrefix(c.twice, "reply"), p.plain,
		int(booked.booked.Load())-countPrefix(c.missing, "booking")-countPrefix(c.twice, "booking"), p.bookings,
		act.actions, act.recalled, p.apiSends-countPrefix(c.missing, "api")-countPrefix(c.twice, "api"), p.apiSends,
		len(c.missing), len(c.twice), edges["outbound_unknown_resent"], pendingBefore, pending,
		webhookProc.kills.Load(), workerProc.kills.Load(), apiProc.kills.Load(), last.kills.Load())
	t.Log(summary)

	if len(plain.accepted) != p.plain {
		t.Errorf("%d of %d plain messages never accepted", p.plain-len(plain.accepted), p.plain)
	}
	if last.kills.Load() == 0 || !outageG.done.Load() {
		t.Errorf("the edges were not exercised: %d last attempts killed, Meta outage over %v", last.kills.Load(), outageG.done.Load())
	}
	for _, pr := range booked.problems {
		t.Errorf("booking: %s", pr)
	}
	if len(c.missing) > 0 {
		t.Errorf("%d lost, first: %v", len(c.missing), c.missing[:min(5, len(c.missing))])
	}
	if len(c.twice) > 0 {
		t.Errorf("%d duplicated: %v", len(c.twice), c.twice[:min(5, len(c.twice))])
	}
	for _, pr := range act.problems {
		t.Errorf("actions: %s", pr)
	}
	if pending > 0 {
		t.Errorf("%d dead letters still waiting: %v", pending, reasons)
	}
	// The run's Meta outage and last-attempt kills make some replies late on purpose (a timeout,
	// the reconcile window, a lease to expire before the sweep): the latency may say degraded,
	// nothing else may.
	if herr != nil || (health.Status != "ok" && !(health.Status == "degraded" && strings.HasPrefix(health.Reason, "webhook-to-sent p95"))) {
		t.Errorf("health = %s %s (%v), want ok", health.Status, health.Reason, herr)
	}
}

// chaosCount is what is missing and what came more than once.
type chaosCount struct {
	missing, twice []string
}

func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// actionTally is what the business saw of the actions.
type actionTally struct {
	actions, calls, executed, recalled int
	states                             map[string]int
	problems                           []string
}

func (a actionTally) String() string {
	return fmt.Sprintf("%d actions, %d calls, run %d times; states %v; calls after the answer was recorded: %d",
		a.actions, a.calls, a.executed, a.states, a.recalled)
}

// checkActions checks each confirmed booking's action: one action id per contact, run once by
// the business (an answer to a repeated Idempotency-Key is the stored one), a final record, and
// no call that arrived after the record's answer (wapipe's once-only check).
func checkActions(ctx context.Context, t *testing.T, db *store.DB, business *actionfake.Fake, confirmed int) actionTally {
	t.Helper()
	a := actionTally{states: map[string]int{}}
	byContact := map[string]map[string][]actionfake.Call{}
	for _, c := range business.Calls() {
		if c.Request == nil {
			a.problems = append(a.problems, fmt.Sprintf("a call that did not verify or decode (status %d)", c.Status))
			continue
		}
		a.calls++
		if byContact[c.Request.From.WaID] == nil {
			byContact[c.Request.From.WaID] = map[string][]actionfake.Call{}
		}
		byContact[c.Request.From.WaID][c.Request.ActionID] = append(byContact[c.Request.From.WaID][c.Request.ActionID], c)
	}
	a.executed = len(business.Executed())
	records := store.NewActionStore(db, store.Options{})
	for contact, ids := range byContact {
		if len(ids) != 1 {
			a.problems = append(a.problems, fmt.Sprintf("contact %s: %d actions for one confirmation", contact, len(ids)))
		}
		for id, calls := range ids {
			a.actions++
			rec, err := records.Get(ctx, id)
			if err != nil {
				a.problems = append(a.problems, fmt.Sprintf("action %s: no record: %v", id, err))
				continue
			}
			a.states[rec.State]++
			if !rec.Final() {
				a.problems = append(a.problems, fmt.Sprintf("action %s: state %s at the end", id, rec.State))
				continue
			}
			ran := 0
			for _, c := range calls {
				if !c.Replayed && c.Status >= 200 && c.Status < 300 {
					ran++
				}
				if c.Time.After(rec.FinishedAt) {
					a.recalled++
					a.problems = append(a.problems, fmt.Sprintf("action %s: called at %s, after its answer was recorded at %s",
						id, c.Time.Format(time.StampMilli), rec.FinishedAt.Format(time.StampMilli)))
				}
			}
			if ran > 1 {
				a.problems = append(a.problems, fmt.Sprintf("action %s: run %d times", id, ran))
			}
			if rec.State == store.ActionDone && ran != 1 {
				a.problems = append(a.problems, fmt.Sprintf("action %s: done, but the business ran it %d times", id, ran))
			}
		}
	}
	if len(byContact) != confirmed {
		a.problems = append(a.problems, fmt.Sprintf("%d contacts' actions reached the business, %d confirmed", len(byContact), confirmed))
	}
	return a
}

// chaosQueues are the queues with backoffs short enough for a run of minutes; max_attempts stay
// those the services read from tasks/queues.yaml, so a task's last attempt is the same to both.
func chaosQueues() *tasks.QueueFile {
	f := tasks.DefaultQueues()
	short := func(id string, q tasks.Queue) tasks.Queue {
		q.RetryConfig.MinBackoff.Duration = 100 * time.Millisecond
		q.RetryConfig.MaxBackoff.Duration = 2 * time.Second
		q.RetryConfig.MaxDoublings = 4
		q.RateLimits.MaxDispatchesPerSecond = 500
		if id != tasks.InboundQueueID {
			// A send of unknown outcome waits for its status webhook across the retries (the
			// status's own inbound task may be retried for a while under the kills), and an
			// action call cut by a kill holds its action for 30 s: keep that window, about two
			// minutes over the 15 attempts, long enough for both.
			q.RetryConfig.MinBackoff.Duration = 500 * time.Millisecond
			q.RetryConfig.MaxBackoff.Duration = 10 * time.Second
		}
		return q
	}
	for id, q := range f.Queues {
		f.Queues[id] = short(id, q)
	}
	for id, q := range f.Templates {
		f.Templates[id] = short(id, q)
	}
	return f
}

// TestWorkerStartsWithoutGeminiCredentials: the worker builds its Gemini client on the first llm
// turn, so with no LLM_BASE_URL and no Application Default Credentials it still starts and
// serves (its ack tenants need no model); the chaos run proves the llm tenants' side.
func TestWorkerStartsWithoutGeminiCredentials(t *testing.T) {
	project := testenv.ProjectID(t)
	bin := buildServices(t)
	emu, _ := testenv.Tasks(t, project, chaosLocation, nil)
	port := freePort(t)
	w := &service{t: t, name: "worker", bin: filepath.Join(bin, "worker"), port: port, logDir: t.TempDir(), env: []string{
		"APP_ENV=dev", "GOOGLE_CLOUD_PROJECT=" + project, "FIRESTORE_EMULATOR_HOST=" + testenv.FirestoreHost(t),
		"CLOUD_TASKS_EMULATOR_HOST=" + emu.Addr(), "TASKS_LOCATION=" + chaosLocation,
		"INTERNAL_TASK_BASE_URL=http://127.0.0.1:1", "INTERNAL_TASK_TOKEN=" + chaosToken,
		"INBOUND_TASK_QUEUE_NAME=" + tasks.InboundQueueID, "OUTBOUND_TASK_QUEUE_NAME=" + tasks.OutboundQueueID,
		// A credentials file that does not exist: the lookup fails at once, on any machine.
		"GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(t.TempDir(), "missing.json"),
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
	}}
	w.start() // fails the test when the worker ends or does not answer /healthz
	t.Cleanup(w.stop)
}
