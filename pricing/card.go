package pricing

import (
	_ "embed" // the rate card files
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The categories of Meta's rate card: a template's category, as Meta's pricing webhooks spell
// it, with authentication_international for authentication templates Meta bills at that rate
// and service for everything else (free on the 2025-07-01 card).
const (
	CategoryMarketing                   = "marketing"
	CategoryMarketingLite               = "marketing_lite"
	CategoryUtility                     = "utility"
	CategoryAuthentication              = "authentication"
	CategoryAuthenticationInternational = "authentication_international"
	CategoryService                     = "service"
)

// The kinds of token a model's price is given for: prompt (text, image and video input), audio
// (audio input) and output.
const (
	kindPrompt = "prompt"
	kindAudio  = "audio"
	kindOutput = "output"
)

// The files, as their problems name them.
const (
	metaFile  = "meta_rates.csv"
	modelFile = "model_prices.csv"
)

// tokensPerPrice is the number of tokens a model_prices.csv price is for.
const tokensPerPrice = 1_000_000

//go:embed meta_rates.csv
var metaRatesCSV string

//go:embed model_prices.csv
var modelPricesCSV string

// Card is a validated rate card: Meta's message prices and the models' token prices, each with
// the dates its rows take effect. It is read-only once built, so one Card may serve every
// goroutine.
type Card struct {
	messages map[rateKey][]dated
	tokens   map[rateKey][]dated // per token, not per million
	models   []string
	markets  []string
	dates    []time.Time
}

// rateKey is a market and a category, or a model and a token kind.
type rateKey struct{ group, item string }

// dated is a price and the UTC day it takes effect.
type dated struct {
	from  time.Time
	price Amount
}

// Load is the card embedded in the binary, validated as Parse validates.
func Load() (*Card, error) {
	c, err := Parse([]byte(metaRatesCSV), []byte(modelPricesCSV))
	if err != nil {
		return nil, fmt.Errorf("pricing.Parse of the embedded rate card: %w", err)
	}
	return c, nil
}

// Parse reads and validates a Meta rate card (meta_rates.csv) and a model price list
// (model_prices.csv). Every problem is one line of the error, naming the file, the line and what
// is wrong, so an operator fixes all of them in one pass.
func Parse(metaCSV, modelCSV []byte) (*Card, error) {
	metaRows, metaErr := parseFile(metaSpec, metaCSV)
	modelRows, modelErr := parseFile(modelSpec, modelCSV)
	if err := errors.Join(metaErr, modelErr); err != nil {
		return nil, err
	}
	c := &Card{messages: index(metaRows, 1), tokens: index(modelRows, tokensPerPrice)}
	for _, r := range metaRows {
		c.markets = append(c.markets, r.group)
		c.dates = append(c.dates, r.from)
	}
	for _, r := range modelRows {
		c.models = append(c.models, r.group)
	}
	slices.Sort(c.markets)
	c.markets = slices.Compact(c.markets)
	slices.SortFunc(c.dates, time.Time.Compare)
	c.dates = slices.CompactFunc(c.dates, time.Time.Equal)
	slices.Sort(c.models)
	c.models = slices.Compact(c.models)
	return c, nil
}

// index groups rows by key, each group sorted by date, prices divided by per (exactly: the spec
// checked it).
func index(rows []row, per Amount) map[rateKey][]dated {
	m := make(map[rateKey][]dated)
	for _, r := range rows {
		k := rateKey{r.group, r.item}
		m[k] = append(m[k], dated{from: r.from, price: r.price / per})
	}
	for _, list := range m {
		slices.SortFunc(list, func(a, b dated) int { return a.from.Compare(b.from) })
	}
	return m
}

// MessagePrice is the price of one billable message of category in market on the UTC day of at:
// the row with the latest effective_from on or before that day. ok is false when the card has no
// row for (market, category) in effect then (BillPrice then falls back to market "Other").
func (c *Card) MessagePrice(market, category string, at time.Time) (Amount, bool) {
	return priceOn(c.messages[rateKey{market, category}], at)
}

// BillPrice is what Meta charges for one billable message of category to a recipient in market
// on the UTC day of at: the market's price, else the "Other" market's. ok is false when neither
// has one (the message is then counted at 0).
func (c *Card) BillPrice(market, category string, at time.Time) (Amount, bool) {
	if p, ok := c.MessagePrice(market, category, at); ok {
		return p, true
	}
	return c.MessagePrice(marketOther, category, at)
}

// CallPrice is what a model call costs on the UTC day of at: prompt tokens (audio included)
// at the prompt price, the audio part of them at the audio price, and output tokens at the
// output price. A kind the card has no price for costs nothing.
func (c *Card) CallPrice(model string, at time.Time, prompt, audio, output int) Amount {
	var sum Amount
	for _, p := range []struct {
		kind string
		n    int
	}{{"prompt", prompt - audio}, {"audio", audio}, {"output", output}} {
		if unit, ok := c.TokenPrice(model, p.kind, at); ok && p.n > 0 {
			sum += unit * Amount(p.n)
		}
	}
	return sum
}

// TokenPrice is the price of one token of kind ("prompt", "audio", "output") of model on the UTC
// day of at. A model is found by its exact name, else by the longest known name that is a prefix
// of it: "gemini-2.5-flash-001" is gemini-2.5-flash, "gemini-2.5-flash-lite-001"
// gemini-2.5-flash-lite. ok is false for an unknown model or kind, or a day before its prices.
func (c *Card) TokenPrice(model, kind string, at time.Time) (Amount, bool) {
	name := ""
	for _, known := range c.models {
		if strings.HasPrefix(model, known) && len(known) > len(name) {
			name = known
		}
	}
	if name == "" {
		return 0, false
	}
	return priceOn(c.tokens[rateKey{name, kind}], at)
}

// priceOn is the price of the row of list in effect on the UTC day of at.
func priceOn(list []dated, at time.Time) (Amount, bool) {
	y, m, d := at.UTC().Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	// The first row that takes effect after the day; the one before it is in effect.
	i := sort.Search(len(list), func(i int) bool { return list[i].from.After(day) })
	if i == 0 {
		return 0, false
	}
	return list[i-1].price, true
}

// Markets lists the markets of Meta's card, sorted.
func (c *Card) Markets() []string { return slices.Clone(c.markets) }

// EffectiveDates lists the distinct effective_from dates of Meta's card (UTC midnights), sorted:
// the days its prices changed.
func (c *Card) EffectiveDates() []time.Time { return slices.Clone(c.dates) }

// fileSpec says what one of the card's files holds: rows of (effective_from, group, item,
// price), a group (a market or a model) needing each of required for every date it appears on.
type fileSpec struct {
	name     string
	header   []string
	items    []string
	required []string
	// group checks a market or model name; price checks a row's price given its item.
	group func(string) error
	price func(item string, price Amount) error
}

var metaSpec = fileSpec{
	name:   metaFile,
	header: []string{"effective_from", "market", "category", "usd"},
	items: []string{CategoryMarketing, CategoryMarketingLite, CategoryUtility, CategoryAuthentication,
		CategoryAuthenticationInternational, CategoryService},
	required: []string{CategoryMarketing, CategoryUtility, CategoryAuthentication, CategoryService},
	group: func(market string) error {
		if !knownMarket(market) {
			return fmt.Errorf("market %q is not one MarketOfPhone or MarketOfCountry returns, so no message would find it", market)
		}
		return nil
	},
	price: func(category string, price Amount) error {
		if category == CategoryService && price != 0 {
			return fmt.Errorf("service is free on Meta's card, so its usd must be 0, not %s", price)
		}
		return nil
	},
}

var modelSpec = fileSpec{
	name:     modelFile,
	header:   []string{"effective_from", "model", "kind", "usd_per_million_tokens"},
	items:    []string{kindPrompt, kindAudio, kindOutput},
	required: []string{kindPrompt, kindAudio, kindOutput},
	group:    func(string) error { return nil },
	price: func(_ string, price Amount) error {
		if price%tokensPerPrice != 0 {
			return fmt.Errorf("usd_per_million_tokens %s has more than 6 decimals, so one token's price is not a whole number of picodollars", price)
		}
		return nil
	},
}
