package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

// TestTurnKnowsTheTenantsDayAndTheSendersName: a message at 23:30 UTC to a tenant in
// Asia/Makassar (UTC+8) reaches Gemini with the next local day as "today" (07:30 there), and with
// the sender's name from the tenant file.
func TestTurnKnowsTheTenantsDayAndTheSendersName(t *testing.T) {
	t.Parallel()
	s, c := assistantStack(t)
	tid := s.assistantTenant("acme-tz", numberA, "time_zone: Asia/Makassar\n")
	now := time.Now().UTC()
	late := time.Date(now.Year(), now.Month(), now.Day(), 23, 30, 0, 0, time.UTC)
	c.advance(late.Sub(time.Now()))
	s.text(numberA, contact, "is bus 03 free tomorrow?", c.now())
	s.waitSendsTo(contact, 1)
	s.settled(tid)
	reqs := s.Gemini.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d Gemini calls, want 1", len(reqs))
	}
	local := late.In(time.FixedZone("WITA", 8*3600))
	sys := reqs[0].SystemInstruction
	for _, want := range []string{"Today is " + local.Format("Monday 2006-01-02") + " (time zone Asia/Makassar), and it is 07:30 there",
		`The user's name is "Marie"`} {
		if !strings.Contains(sys, want) {
			t.Errorf("the model's instructions lack %q:\n%s", want, sys)
		}
	}
}

// TestTypingWhileTheModelThinks: with the fake Gemini's answer held back two seconds, the sender
// sees the typing indicator once in the turn (a mark-as-read with typing_indicator reaches Meta,
// besides the plain read receipt); a turn the model answers at once shows none.
func TestTypingWhileTheModelThinks(t *testing.T) {
	t.Parallel()
	s, _ := assistantStack(t)
	tid := s.assistantTenant("acme-typing", numberA, "")
	typing := func() int {
		n := 0
		for _, r := range s.Graph.Requests() {
			if r.Kind == graphfake.KindRead && r.Status == 200 && r.Body["typing_indicator"] != nil {
				n++
			}
		}
		return n
	}
	s.text(numberA, contact, "halo", time.Now())
	s.waitSendsTo(contact, 1)
	s.settled(tid)
	if n := typing(); n != 0 {
		t.Errorf("%d typing indicators for a quick turn, want none", n)
	}
	s.Gemini.FailNext(1, geminifake.Failure{Delay: 2 * time.Second})
	s.text(numberA, contact, "is bus 03 free tomorrow?", time.Now().Add(time.Second))
	s.waitSendsTo(contact, 2)
	s.settled(tid)
	if n := typing(); n != 1 {
		t.Errorf("%d typing indicators for a turn the model took 2 s over, want 1", n)
	}
}
