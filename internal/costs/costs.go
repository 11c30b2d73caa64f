// Package costs estimates what a tenant's traffic costs a month, Meta's templates and the
// model's tokens, from the rate card (package pricing) and the request estimate the budget
// checks use (llm.EstimateTokens): the README's cost table and BenchmarkCostPerMessage.
package costs

import (
	"fmt"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/pricing"
)

// Mix is a month's traffic of a tenant, per 1,000 messages its people send: what the model
// reads and writes, and what wapipe sends that Meta charges. The README's cost table is
// computed from DefaultMix by CostTable (a test keeps them equal).
type Mix struct {
	// Texts, VoiceNotes and Photos are the inbound messages by kind (they sum to 1,000).
	Texts, VoiceNotes, Photos int
	// VoiceSeconds is a voice note's length; ContextChars what a turn's request holds besides
	// the message (instructions, intents, history).
	VoiceSeconds, ContextChars int
	// OutputTokens is a turn's answer.
	OutputTokens int
	// Utility and Marketing are the templates sent outside a customer service window (re-engage
	// templates, notifications, the business's own sends); replies inside it are free.
	Utility, Marketing int
}

// DefaultMix is seed 000's tour-bus company: mostly short texts, a voice note in six, a few
// photos, answers of about 150 tokens, and some templates to people whose window closed.
var DefaultMix = Mix{Texts: 750, VoiceNotes: 170, Photos: 80, VoiceSeconds: 20, ContextChars: 6000, OutputTokens: 150,
	Utility: 60, Marketing: 10}

// Cost is what m costs in market with model on the day of at: Meta's templates and the model's
// tokens (each turn estimated as llm.EstimateTokens does, with the mix's answer length).
func (m Mix) Cost(card *pricing.Card, market, model string, at time.Time) (meta, llmCost pricing.Amount) {
	price := func(cat string) pricing.Amount { p, _ := card.BillPrice(market, cat, at); return p }
	meta = price(pricing.CategoryUtility)*pricing.Amount(m.Utility) + price(pricing.CategoryMarketing)*pricing.Amount(m.Marketing)
	turn := func(n int, media *llm.Media) pricing.Amount {
		e := llm.EstimateTokens(llm.Request{Model: model, Instructions: strings.Repeat("x", m.ContextChars), Text: "Bus 03 AC mati", Media: media})
		return card.CallPrice(model, at, e.Prompt, e.Audio, m.OutputTokens) * pricing.Amount(n)
	}
	voice := &llm.Media{MIMEType: "audio/ogg", Data: make([]byte, m.VoiceSeconds*2000)}
	photo := &llm.Media{MIMEType: "image/jpeg", Data: make([]byte, 200_000)}
	llmCost = turn(m.Texts, nil) + turn(m.VoiceNotes, voice) + turn(m.Photos, photo)
	return meta, llmCost
}

// CostMarkets are the markets of the README's table.
var CostMarkets = []string{"Indonesia", "India", "Brazil", "North America", "Germany"}

// CostTable is the README's table: per 1,000 messages of DefaultMix, Meta's and the model's
// money in each of CostMarkets, with gemini-2.5-flash, at the card's prices on at.
func CostTable(card *pricing.Card, at time.Time) string {
	var b strings.Builder
	b.WriteString("| market | Meta (templates) | model (gemini-2.5-flash) | total |\n|---|---:|---:|---:|\n")
	for _, market := range CostMarkets {
		meta, model := DefaultMix.Cost(card, market, "gemini-2.5-flash", at)
		fmt.Fprintf(&b, "| %s | $%s | $%s | $%s |\n", market, meta.Round(2), model.Round(2), (meta + model).Round(2))
	}
	return b.String()
}
