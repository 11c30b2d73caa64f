package costs_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/costs"
	"github.com/wapipe/wapipe/pricing"
)

// tableDay is the day the README's table is priced at.
var tableDay = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// TestREADMECostTable: the README's cost table is CostTable's, from the rate card in pricing/;
// a changed price or mix changes the README with it (run the test, paste what it prints).
func TestREADMECostTable(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := costs.CostTable(card, tableDay); !strings.Contains(string(readme), table) {
		t.Errorf("the README's cost table is not the code's; it should read:\n%s", table)
	}
}

// TestMixCost: a mix with only templates costs Meta's prices and nothing of the model; a voice
// note costs more model than a text.
func TestMixCost(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatal(err)
	}
	meta, model := costs.Mix{Utility: 10, Marketing: 1}.Cost(card, "India", "gemini-2.5-flash", tableDay)
	if want := pricing.Amount(10*1_400_000_000 + 10_700_000_000); meta != want || model != 0 {
		t.Errorf("templates only: meta %s, model %s; want %s and 0", meta, model, want)
	}
	_, text := costs.Mix{Texts: 1, ContextChars: 6000, OutputTokens: 150}.Cost(card, "India", "gemini-2.5-flash", tableDay)
	_, voice := costs.Mix{VoiceNotes: 1, VoiceSeconds: 20, ContextChars: 6000, OutputTokens: 150}.Cost(card, "India", "gemini-2.5-flash", tableDay)
	if text <= 0 || voice <= text {
		t.Errorf("a text turn %s, a voice note %s: want a voice note to cost more", text, voice)
	}
}

// BenchmarkCostPerMessage reports the README's traffic mix (costs.DefaultMix) in money: Meta's
// and the model's USD per 1,000 messages in Indonesia, with gemini-2.5-flash.
func BenchmarkCostPerMessage(b *testing.B) {
	card, err := pricing.Load()
	if err != nil {
		b.Fatal(err)
	}
	var meta, model pricing.Amount
	for b.Loop() {
		meta, model = costs.DefaultMix.Cost(card, "Indonesia", "gemini-2.5-flash", tableDay)
	}
	b.ReportMetric(float64(meta)/1e12, "meta_usd/1k_msgs")
	b.ReportMetric(float64(model)/1e12, "llm_usd/1k_msgs")
	b.ReportMetric(float64(meta+model)/1e12, "usd/1k_msgs")
}
