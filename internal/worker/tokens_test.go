package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestAssistantRecordsTokenUsage: turns answered through the fake Vertex AI add the prompt and
// output tokens its usageMetadata reported to the tenant's usage of the month, beside the call
// count.
func TestAssistantRecordsTokenUsage(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-tokens", numberA, "")
	before := turnstate.Period(time.Now())
	s.text(numberA, contact, "hello there", time.Time{})
	s.waitSendsTo(contact, 1)
	s.text(numberA, contact, "what can you do?", time.Time{})
	s.waitSendsTo(contact, 2)
	s.settled(tid)

	var prompt, output int64
	calls := 0
	for _, r := range s.Gemini.Requests() {
		if r.Status == 200 {
			prompt, output = prompt+int64(r.PromptTokens), output+int64(r.OutputTokens)
			calls++
		}
	}
	if calls != 2 || prompt == 0 || output == 0 {
		t.Fatalf("%d answered LLM calls with %d prompt and %d output tokens, want 2 with tokens", calls, prompt, output)
	}
	guard := store.NewGuard(store.NewDB(s.fs), store.Options{})
	ctx := context.Background()
	var got store.TokenUsage
	used := 0
	// The turns' month: the one of the test's start, or the next one if it began since.
	for _, period := range uniq(before, turnstate.Period(time.Now())) {
		tk, err := guard.Tokens(ctx, tid, period)
		if err != nil {
			t.Fatal(err)
		}
		n, err := guard.Usage(ctx, tid, period)
		if err != nil {
			t.Fatal(err)
		}
		got.Prompt, got.Output, used = got.Prompt+tk.Prompt, got.Output+tk.Output, used+n
	}
	if want := (store.TokenUsage{Prompt: prompt, Output: output}); got != want || used != 2 {
		t.Errorf("recorded %+v over %d calls, want %+v (the fake's usageMetadata) over 2", got, used, want)
	}
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
