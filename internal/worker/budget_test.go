package worker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// TestBudgetRefusesALongVoiceNoteBeforeTheModel: a tenant whose monthly budget (one cent) is
// smaller than what a 15 MiB voice note would cost the model (about 250,000 audio tokens, some
// $0.25 at gemini-2.5-flash's audio price) gets the quota notice for it, in its language, before
// any Gemini call, and its ledger is unchanged; an ordinary text turn, which fits, still goes to
// the model and is priced in the ledger.
func TestBudgetRefusesALongVoiceNoteBeforeTheModel(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-budget", numberA, "budget: {monthly_usd: \"0.01\", per_sender_share: 1}\n")
	guard := store.NewGuard(store.NewDB(s.fs), store.Options{})
	ctx := context.Background()
	const from = "33650000001"
	// Opus voice at 16 kbit/s: 15 MiB is about two hours.
	voice := append([]byte("OggS"), bytes.Repeat([]byte{0x4f}, 15<<20-5)...)
	f := s.holdMedia(voice, "audio/ogg", true)
	s.deliver(whatsapp.SampleMedia(whatsapp.SampleOptions{PhoneNumberID: numberA, From: from, Timestamp: time.Now()}, "audio", f))
	if got := body(s.waitSendsTo(from, 1)[0]); got != i18n.Text("en", i18n.QuotaExceeded) {
		t.Errorf("the long voice note was answered %q, want the quota notice", got)
	}
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 0 {
		t.Fatalf("%d Gemini calls for a voice note over the budget, want none", n)
	}
	period := turnstate.Period(time.Now())
	if l, err := guard.Ledger(ctx, tid, period); err != nil || l.Total() != 0 || l.PromptTokens != 0 {
		t.Errorf("the ledger after the refused voice note: %+v, %v; want it unchanged (empty)", l, err)
	}
	s.text(numberA, from, "Is bus 03 free on 1 March?", time.Now())
	if got := body(s.waitSendsTo(from, 2)[1]); got == i18n.Text("en", i18n.QuotaExceeded) {
		t.Errorf("an ordinary text within the budget got the quota notice")
	}
	s.settled(tid)
	if n := len(s.Gemini.Requests()); n != 1 {
		t.Errorf("%d Gemini calls after the text, want 1", n)
	}
	l, err := guard.Ledger(ctx, tid, period)
	if err != nil || l.LLM <= 0 || l.PromptTokens == 0 || l.AudioTokens != 0 {
		t.Errorf("the ledger after the text turn: %+v, %v; want its tokens priced", l, err)
	}
	if spent, err := guard.Spent(ctx, tid, period); err != nil || spent != l.Total() {
		t.Errorf("Spent = %v, %v; want the ledger's total %v", spent, err, l.Total())
	}
}
