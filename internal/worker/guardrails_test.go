package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenantcache"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/worker"
)

// The end-to-end guardrail tests: rate limits, the quota and LLM failures, with the fake Gemini.

// countBodies counts the sends to a contact whose text is want.
func (s *stack) countBodies(to, want string) int {
	n := 0
	for _, r := range s.sendsTo(to) {
		if body(r) == want {
			n++
		}
	}
	return n
}

// usage is the tenant's counted LLM calls this month.
func (s *stack) usage(tenantID string) int {
	s.t.Helper()
	n, err := store.NewGuard(store.NewDB(s.fs), store.Options{}).Usage(context.Background(), tenantID, turnstate.Period(time.Now()))
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

func TestGuardrailSenderLimitAcrossNumbers(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	ops := s.ops()
	tid := s.applyTenant(ops, twoNumberTenant("acme-sender", "{max: 100, per: 30s}", "{max: 20, per: 5m}",
		"{mode: llm, model: gemini-2.5-flash, instructions: Help., min_confidence: 0.5}"), "token-acme-sender")
	base := time.Now()
	for i := range 25 {
		number := numberA
		if i%2 == 1 {
			number = numberB
		}
		s.text(number, contact, fmt.Sprintf("question %d", i), base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(contact, 21)
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 20 {
		t.Errorf("%d LLM calls for 25 messages over two numbers with a 20/5m sender limit, want 20", n)
	}
	if n := s.countBodies(contact, i18n.Text("en", i18n.RateLimited)); n != 1 {
		t.Errorf("%d rate-limit notices, want 1", n)
	}
	if n := len(s.sendsTo(contact)); n != 21 {
		t.Errorf("%d messages to the sender, want 21 (20 answers, 1 notice)", n)
	}
	if s.usage(tid) != 20 {
		t.Errorf("usage %d, want 20: messages over a limit are not counted", s.usage(tid))
	}
	if !strings.Contains(s.logs.String(), `"reason":"sender_limit"`) {
		t.Error("no rate_limited log line with reason sender_limit")
	}
}

func TestGuardrailQuota(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-quota", numberA, quotaLimits+"quota: {llm_calls_per_month: 2}\n")
	quotaText := i18n.Text("en", i18n.QuotaExceeded)
	base := time.Now()
	for i := range 3 {
		s.text(numberA, contact, fmt.Sprintf("question %d", i), base.Add(time.Duration(i)*time.Second))
	}
	s.waitSendsTo(contact, 3)
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 2 {
		t.Errorf("%d LLM calls with quota 2, want 2", n)
	}
	if n := s.countBodies(contact, quotaText); n != 1 {
		t.Errorf("%d quota notices, want 1", n)
	}
	convID := s.mustConversationOf(tid, numberA, contact)
	msgs, err := store.NewConversationStore(store.NewDB(s.fs), store.Options{}).Messages(context.Background(), convID, 100)
	// One of the three is over the quota: the one whose turn ran third, which under load need not
	// be the one Meta stamped last (tasks run in no fixed order; turns run in the order they queue).
	over := 0
	for _, m := range msgs {
		if m.QuotaExceeded {
			over++
		}
	}
	if err != nil || len(msgs) != 3 || over != 1 {
		t.Errorf("stored messages %d (%v), %d quota_exceeded; want 3, one of them quota_exceeded", len(msgs), err, over)
	}
	// The fourth message: the conversation's cached block, no quota read, no LLM call.
	s.text(numberA, contact, "question 3", base.Add(3*time.Second))
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 2 {
		t.Errorf("%d LLM calls after the block, want 2", n)
	}
	if !strings.Contains(s.logs.String(), `"turn_event":"quota_blocked_cached"`) {
		t.Error("the fourth message did not use the cached block (turn_event quota_blocked_cached)")
	}
	// An apply that raises the quota lifts the block.
	s.assistantTenant("acme-quota", numberA, quotaLimits+"quota: {llm_calls_per_month: 10}\n")
	// The worker sees the apply within its tenant cache's TTL: ask once a second until then.
	var last time.Time
	testenv.Eventually(t, 4*tenantcache.TenantCacheTTL, func() bool {
		if time.Since(last) >= time.Second {
			last = time.Now()
			s.text(numberA, contact, "question again", last)
			s.settled(tid)
		}
		return len(s.Gemini.Requests()) > 2
	}, "a raised quota never served the contact again")
	if u := s.usage(tid); u != len(s.Gemini.Requests()) {
		t.Errorf("usage %d, want %d: one per LLM call made", u, len(s.Gemini.Requests()))
	}
}

// failingGuard passes the sender limit and fails every quota check.
type failingGuard struct{}

func (failingGuard) HitSender(context.Context, turnstate.SenderHit) (turnstate.RateDecision, error) {
	return turnstate.RateDecision{}, nil
}

func (failingGuard) ReserveCall(context.Context, turnstate.CallReservation) (turnstate.CallDecision, error) {
	return turnstate.CallDecision{}, errors.New("rpc error: code = Unavailable desc = the usage store is down")
}

func (failingGuard) RecordTokens(context.Context, turnstate.TokenUse) error { return nil }

// lateExtractor asks the fake Gemini whose URL is known only once the stack is up.
type lateExtractor struct {
	mu  sync.Mutex
	url *string
	c   *llm.Client
}

func (l *lateExtractor) Extract(ctx context.Context, req llm.Request) (llm.Result, error) {
	l.mu.Lock()
	if l.c == nil {
		c, err := llm.New(ctx, llm.Config{Project: "wapipe-test", BaseURL: *l.url, HTTPClient: http.DefaultClient})
		if err != nil {
			l.mu.Unlock()
			return llm.Result{}, err
		}
		l.c = c
	}
	c := l.c
	l.mu.Unlock()
	return c.Extract(ctx, req)
}

func TestGuardrailQuotaCheckFailsSafe(t *testing.T) {
	t.Parallel()
	var geminiURL string
	x := &lateExtractor{url: &geminiURL}
	s := newStack(t, stackOptions{worker: []func(*worker.Deps){func(d *worker.Deps) {
		d.Assistant = assistant.New(x, failingGuard{})
	}}})
	geminiURL = s.GeminiURL
	tid := s.assistantTenant("acme-quota-down", numberA, "")
	s.text(numberA, contact, "question", time.Time{})
	got := s.waitSendsTo(contact, 1)[0]
	s.settled(tid)
	if body(got) != i18n.Text("en", i18n.Unavailable) {
		t.Errorf("answer %q, want the unavailable fallback", body(got))
	}
	if n := len(s.Gemini.Requests()); n != 0 {
		t.Errorf("%d LLM calls while the quota could not be checked, want 0", n)
	}
	if !strings.Contains(s.logs.String(), `"reason":"quota_check_error"`) {
		t.Error("no log line with reason quota_check_error")
	}
}

// TestGuardrailQuotaExactUnderConcurrency: 100 contacts at once, quota 50: exactly 50 LLM calls,
// usage exactly 50, the other 50 get the quota notice.
func TestGuardrailQuotaExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-hundred", numberA, "quota: {llm_calls_per_month: 50}\nsending: {per_second: 500, max_concurrent: 50}\n")
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { s.text(numberA, fmt.Sprintf("3362000%04d", i), "question", time.Time{}) })
	}
	wg.Wait()
	testenv.Eventually(t, 90*time.Second, func() bool { return len(s.Graph.Sends()) >= n }, "not every contact was answered")
	s.settled(tid)
	if got := len(s.Gemini.Requests()); got != 50 {
		t.Errorf("%d LLM calls, want exactly 50", got)
	}
	if u := s.usage(tid); u != 50 {
		t.Errorf("usage %d, want exactly 50", u)
	}
	notices := 0
	for _, r := range s.Graph.Sends() {
		if body(r) == i18n.Text("en", i18n.QuotaExceeded) {
			notices++
		}
	}
	if notices != 50 {
		t.Errorf("%d quota notices, want 50", notices)
	}
}

func TestGuardrailLLMErrorRetriedThroughCloudTasks(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-500", numberA, "")
	s.Gemini.FailNext(1, geminifake.Failure{Status: 500})
	s.text(numberA, contact, "what time is it", time.Time{})
	got := s.waitSendsTo(contact, 1)
	s.settled(tid)
	if len(s.sendsTo(contact)) != 1 || body(got[0]) == i18n.Text("en", i18n.Unavailable) {
		t.Errorf("sends %d, first %q; want one answer after the retry", len(s.sendsTo(contact)), body(got[0]))
	}
	if n := len(s.Gemini.Requests()); n != 2 {
		t.Errorf("%d LLM calls, want 2 (the 500, then the redone turn)", n)
	}
	if u := s.usage(tid); u != 1 {
		t.Errorf("usage %d, want 1: the failed call's reservation is reused by the redone turn", u)
	}
}

func TestGuardrailInvalidAnswerTwiceIsNotUnderstood(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-json", numberA, "")
	if err := s.Gemini.AddRule(geminifake.Rule{Contains: "gibberish", RawText: "this is not JSON"}); err != nil {
		t.Fatal(err)
	}
	s.text(numberA, contact, "gibberish", time.Time{})
	got := s.waitSendsTo(contact, 1)[0]
	s.settled(tid)
	if body(got) != i18n.Text("en", i18n.NotUnderstood) {
		t.Errorf("answer %q, want not understood", body(got))
	}
	if n := len(s.Gemini.Requests()); n != 2 {
		t.Errorf("%d LLM calls, want 2 (the answer, its one retry)", n)
	}
	if n := len(s.sendsTo(contact)); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// quotaLimits lifts the rate limits, so the quota tests meet only the quota.
const quotaLimits = "limits:\n  conversation: {max: 100, per: 30s}\n  sender: {max: 100, per: 5m}\n"
