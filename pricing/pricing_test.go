package pricing_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/pricing"
)

// cardMarkets are the markets of Meta's 2025-07-01 card.
var cardMarkets = []string{
	"Argentina", "Brazil", "Chile", "Colombia", "Egypt", "France", "Germany", "India", "Indonesia",
	"Israel", "Italy", "Malaysia", "Mexico", "Netherlands", "Nigeria", "North America", "Other",
	"Pakistan", "Peru", "Rest of Africa", "Rest of Asia Pacific", "Rest of Central & Eastern Europe",
	"Rest of Latin America", "Rest of Middle East", "Rest of Western Europe", "Russia",
	"Saudi Arabia", "South Africa", "Spain", "Turkey", "United Arab Emirates", "United Kingdom",
}

func day(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func usd(t *testing.T, s string) pricing.Amount {
	t.Helper()
	a, err := pricing.ParseUSD(s)
	if err != nil {
		t.Fatalf("ParseUSD(%q): %v", s, err)
	}
	return a
}

// TestLoad is the test of the rate card itself: the embedded files parse and validate, every
// market of Meta's card is there with every category a message needs, and a market the phone and
// country tables return has a price.
func TestLoad(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(cardMarkets, card.Markets()); diff != "" {
		t.Errorf("Markets (-want, +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Time{day("2025-07-01T00:00:00Z")}, card.EffectiveDates()); diff != "" {
		t.Errorf("EffectiveDates (-want, +got):\n%s", diff)
	}
	at := day("2026-01-15T12:00:00Z")
	for _, market := range cardMarkets {
		for _, category := range []string{pricing.CategoryMarketing, pricing.CategoryMarketingLite, pricing.CategoryUtility, pricing.CategoryAuthentication} {
			if p, ok := card.MessagePrice(market, category, at); !ok || p <= 0 {
				t.Errorf("MessagePrice(%q, %q) = %v, %v; want a positive price", market, category, p, ok)
			}
		}
		if p, ok := card.MessagePrice(market, pricing.CategoryService, at); !ok || p != 0 {
			t.Errorf("MessagePrice(%q, service) = %v, %v; want 0, true", market, p, ok)
		}
	}
	for _, iso := range []string{"US", "BR", "IN", "ID", "GB", "DE", "KE", "AU", "PL", "AT", "EC", "DO", "JO", "KZ", "ZZ"} {
		market := pricing.MarketOfCountry(iso)
		if _, ok := card.MessagePrice(market, pricing.CategoryMarketing, at); !ok {
			t.Errorf("MarketOfCountry(%q) = %q, which the card does not price", iso, market)
		}
	}
}

// TestLoadPrices spot-checks rows of the embedded card against Meta's 2025-07-01 list and the
// Vertex AI price list.
func TestLoadPrices(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	at := day("2025-07-01T00:00:00Z")
	messages := []struct {
		market, category, want string
	}{
		{"India", pricing.CategoryMarketing, "0.0107"},
		{"India", pricing.CategoryAuthenticationInternational, "0.0280"},
		{"North America", pricing.CategoryUtility, "0.0040"},
		{"Brazil", pricing.CategoryMarketingLite, "0.0625"},
		{"Other", pricing.CategoryAuthentication, "0.0077"},
	}
	for _, m := range messages {
		if p, ok := card.MessagePrice(m.market, m.category, at); !ok || p.String() != m.want {
			t.Errorf("MessagePrice(%q, %q) = %v, %v; want %s", m.market, m.category, p, ok, m.want)
		}
	}
	if p, ok := card.MessagePrice("Brazil", pricing.CategoryAuthenticationInternational, at); ok {
		t.Errorf("MessagePrice(Brazil, authentication_international) = %v; Meta charges no such rate there", p)
	}
	tokens := []struct {
		model, kind, perMillion string
	}{
		{"gemini-2.5-flash", "prompt", "0.30"},
		{"gemini-2.5-flash", "audio", "1.00"},
		{"gemini-2.5-flash-lite", "output", "0.40"},
		{"gemini-2.0-flash", "audio", "0.70"},
		{"gemini-2.5-pro", "output", "10.00"},
	}
	for _, tk := range tokens {
		p, ok := card.TokenPrice(tk.model, tk.kind, at)
		if want := usd(t, tk.perMillion); !ok || p*1_000_000 != want {
			t.Errorf("TokenPrice(%q, %q) = %v, %v; want %v per million tokens", tk.model, tk.kind, p, ok, want)
		}
	}
}

func TestParseUSD(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want pricing.Amount
	}{
		{"0", 0},
		{"0.0000", 0},
		{"0.0107", 10_700_000_000},
		{"0.30", 300_000_000_000},
		{"1", 1_000_000_000_000},
		{"12.345", 12_345_000_000_000},
		{"007.50", 7_500_000_000_000},
		{"0.000000000001", 1},
		{"9223372.036854775807", math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := pricing.ParseUSD(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("ParseUSD(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseUSDRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
	}{
		{"", "empty"},
		{"-0.01", "negative"},
		{"-0", "negative"},
		{"+1", "not a decimal number"},
		{"1e-3", "not a decimal number"},
		{"1E3", "not a decimal number"},
		{"1.", "not a decimal number"},
		{".5", "not a decimal number"},
		{"1.2.3", "not a decimal number"},
		{"1,5", "not a decimal number"},
		{" 1", "not a decimal number"},
		{"NaN", "not a decimal number"},
		{"0x10", "not a decimal number"},
		{"0.0000000000001", "more than 12 decimals"},
		{"9223372.036854775808", "more than an Amount holds"},
		{"10000000", "more than an Amount holds"},
		{"99999999999999999999999", "more than an Amount holds"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := pricing.ParseUSD(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseUSD(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestAmountString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   pricing.Amount
		want string
	}{
		{0, "0.0000"},
		{10_700_000_000, "0.0107"},
		{300_000, "0.0000003"},
		{12_345_000_000_000, "12.3450"},
		{1_000_000_000_000, "1.0000"},
		{1, "0.000000000001"},
		{-10_700_000_000, "-0.0107"},
		{math.MaxInt64, "9223372.036854775807"},
		{math.MinInt64, "-9223372.036854775808"},
	}
	for _, tc := range cases {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Amount(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestAmountRound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       pricing.Amount
		decimals int
		want     string
	}{
		{12_345_000_000_000, 2, "12.35"},
		{-12_345_000_000_000, 2, "-12.35"},
		{12_344_999_999_999, 2, "12.34"},
		{0, 2, "0.00"},
		{10_700_000_000, 0, "0"},
		{500_000_000_000, 0, "1"},
		{2_500_000_000_000, 0, "3"},
		{10_700_000_000, 4, "0.0107"},
		{10_750_000_000, 3, "0.011"},
		{-4_000_000_000, 2, "0.00"}, // rounds to zero: no sign
		{-5_000_000_000, 2, "-0.01"},
		{1_500_000_000_000, 14, "1.50000000000000"},
		{1, 12, "0.000000000001"},
		{1_500_000_000_000, -1, "2"},
		{math.MaxInt64, 0, "9223372"},
		{math.MinInt64, 2, "-9223372.04"},
	}
	for _, tc := range cases {
		if got := tc.in.Round(tc.decimals); got != tc.want {
			t.Errorf("Amount(%d).Round(%d) = %q, want %q", int64(tc.in), tc.decimals, got, tc.want)
		}
	}
}

func TestAmountFraction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       pricing.Amount
		num, den int64
		want     pricing.Amount
	}{
		{"80 % of 10 USD", 10_000_000_000_000, 4, 5, 8_000_000_000_000},
		{"a third of 1 USD", 1_000_000_000_000, 1, 3, 333_333_333_333},
		{"two thirds of 1 USD rounds up", 1_000_000_000_000, 2, 3, 666_666_666_667},
		{"half a picodollar rounds up", 1, 1, 2, 1},
		{"1.5 picodollars rounds up", 3, 1, 2, 2},
		{"a third of a picodollar rounds down", 1, 1, 3, 0},
		{"negative halves round away from zero", -3, 1, 2, -2},
		{"negative num", 5, -1, 2, -3},
		{"both negative", 5, -1, -2, 3},
		{"whole", 10_700_000_000, 7, 7, 10_700_000_000},
		{"zero", 0, 1, 3, 0},
		{"product past 64 bits", math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"three quarters of the most", math.MaxInt64, 3, 4, 6_917_529_027_641_081_855},
		{"share of 9,000,000 USD in millionths", 9_000_000_000_000_000_000, 1_000_000, 3_000_000, 3_000_000_000_000_000_000},
		{"the least, whole", math.MinInt64, 1, 1, math.MinInt64},
		{"past the most saturates", math.MaxInt64, 2, 1, math.MaxInt64},
		{"past the least saturates", math.MaxInt64, -2, 1, math.MinInt64},
		{"negating the least saturates", math.MinInt64, -1, 1, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.in.Fraction(tc.num, tc.den); got != tc.want {
				t.Errorf("Amount(%d).Fraction(%d, %d) = %d, want %d", int64(tc.in), tc.num, tc.den, int64(got), int64(tc.want))
			}
		})
	}
}

func TestAmountFractionZeroDenominatorPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Fraction(1, 0) did not panic")
		}
	}()
	pricing.Amount(1).Fraction(1, 0)
}

// TestAmountSumIsExact: a thousand messages at 0.0107 cost exactly 10.7, where float64 drifts.
func TestAmountSumIsExact(t *testing.T) {
	t.Parallel()
	price := usd(t, "0.0107")
	var sum pricing.Amount
	for range 1000 {
		sum += price
	}
	if got := sum.String(); got != "10.7000" {
		t.Errorf("1,000 × 0.0107 = %s, want 10.7000", got)
	}
	// Token prices too: a million tokens at 0.30 per million is 0.30, token by token.
	card, err := pricing.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	perToken, _ := card.TokenPrice("gemini-2.5-flash", "prompt", day("2025-08-01T00:00:00Z"))
	sum = 0
	for range 1_000_000 {
		sum += perToken
	}
	if got := sum.String(); got != "0.3000" {
		t.Errorf("1,000,000 tokens at 0.30 per million = %s, want 0.3000", got)
	}
}

const (
	metaHeader  = "effective_from,market,category,usd"
	modelHeader = "effective_from,model,kind,usd_per_million_tokens"
)

// lines joins a file's lines.
func lines(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

// marketRows are the rows a market needs on a date.
func marketRows(date, market, marketing string) []string {
	return []string{
		date + "," + market + ",marketing," + marketing,
		date + "," + market + ",utility,0.0068",
		date + "," + market + ",authentication,0.0068",
		date + "," + market + ",service,0",
	}
}

// modelRows are the rows a model needs on a date.
func modelRows(date, model string) []string {
	return []string{
		date + "," + model + ",prompt,0.30",
		date + "," + model + ",audio,1.00",
		date + "," + model + ",output,2.50",
	}
}

var (
	goodMeta   = lines(append([]string{metaHeader}, marketRows("2025-07-01", "Brazil", "0.0625")...)...)
	goodModels = lines(append([]string{modelHeader}, modelRows("2025-07-01", "gemini-2.5-flash")...)...)
)

// TestParseRefuses: each problem is refused with a line naming the file and the line.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	brazil := marketRows("2025-07-01", "Brazil", "0.0625")
	flash := modelRows("2025-07-01", "gemini-2.5-flash")
	cases := []struct {
		name        string
		meta, model []byte
		want        string // a line of the error starts with it
	}{
		{"empty file", []byte(""), goodModels, "meta_rates.csv:1: no header"},
		{"only comments", lines("# a comment", "# another"), goodModels, "meta_rates.csv:1: no header"},
		{"bad header", lines(append([]string{"effective_from,market,category,price"}, brazil...)...), goodModels, `meta_rates.csv:1: header is "effective_from,market,category,price"`},
		{"bad header after comments", lines("# source", "# copied", "date,market,category,usd"), goodModels, "meta_rates.csv:3: header is"},
		{"header only", lines(metaHeader), goodModels, "meta_rates.csv:1: no rows after the header"},
		{"bad date", lines(metaHeader, brazil[0], brazil[1], brazil[2], brazil[3], "2025-02-30,Chile,marketing,0.0889"), goodModels, `meta_rates.csv:6: effective_from "2025-02-30" is not a date`},
		{"date with a time", lines(metaHeader, "2025-07-01T00:00:00Z,Brazil,marketing,0.0625"), goodModels, "meta_rates.csv:2: effective_from"},
		{"unknown category", lines(metaHeader, brazil[0], brazil[1], brazil[2], brazil[3], "2025-07-01,Brazil,promotional,0.0625"), goodModels, `meta_rates.csv:6: category "promotional" is not one of`},
		{"unknown market", lines(metaHeader, "2025-07-01,Narnia,marketing,0.05"), goodModels, `meta_rates.csv:2: market "Narnia" is not one`},
		{"empty market", lines(metaHeader, "2025-07-01,,marketing,0.05"), goodModels, "meta_rates.csv:2: market is empty"},
		{"negative price", lines(metaHeader, "2025-07-01,Brazil,marketing,-0.0625"), goodModels, "meta_rates.csv:2: usd: amount \"-0.0625\" is negative"},
		{"price not a number", lines(metaHeader, "2025-07-01,Brazil,marketing,six cents"), goodModels, "meta_rates.csv:2: usd: amount \"six cents\" is not a decimal number"},
		{"too few fields", lines(metaHeader, "2025-07-01,Brazil,marketing"), goodModels, "meta_rates.csv:2: 3 fields, want 4"},
		{"bare quote", lines(metaHeader, `2025-07-01,Bra"zil,marketing,0.0625`), goodModels, "meta_rates.csv:2: bare \" in non-quoted-field"},
		{"duplicate row", lines(metaHeader, brazil[0], brazil[1], brazil[2], brazil[3], "2025-07-01,Brazil,marketing,0.0700"), goodModels, "meta_rates.csv:6: duplicate row for (2025-07-01, Brazil, marketing): first on line 2"},
		{"missing category", lines(metaHeader, brazil[0], brazil[2], brazil[3]), goodModels, `meta_rates.csv:2: market "Brazil" effective 2025-07-01 has no utility row`},
		{"missing categories on a new date", lines(metaHeader, brazil[0], brazil[1], brazil[2], brazil[3], "2025-10-01,Brazil,marketing,0.05"), goodModels, `meta_rates.csv:6: market "Brazil" effective 2025-10-01 has no utility, no authentication, no service row`},
		{"non-zero service", lines(metaHeader, brazil[0], brazil[1], brazil[2], "2025-07-01,Brazil,service,0.0010"), goodModels, "meta_rates.csv:5: service is free on Meta's card, so its usd must be 0, not 0.0010"},
		{"model bad header", goodMeta, lines(append([]string{"effective_from,model,kind,usd"}, flash...)...), "model_prices.csv:1: header is"},
		{"model unknown kind", goodMeta, lines(modelHeader, flash[0], flash[1], flash[2], "2025-07-01,gemini-2.5-flash,video,0.30"), `model_prices.csv:5: kind "video" is not one of prompt, audio, output`},
		{"model missing kind", goodMeta, lines(modelHeader, flash[0], flash[2]), `model_prices.csv:2: model "gemini-2.5-flash" effective 2025-07-01 has no audio row`},
		{"model duplicate", goodMeta, lines(modelHeader, flash[0], flash[1], flash[2], flash[0]), "model_prices.csv:5: duplicate row for (2025-07-01, gemini-2.5-flash, prompt): first on line 2"},
		{"model price past 6 decimals", goodMeta, lines(modelHeader, "2025-07-01,gemini-2.5-flash,prompt,0.0000001", flash[1], flash[2]), "model_prices.csv:2: usd_per_million_tokens 0.0000001 has more than 6 decimals"},
		{"model empty name", goodMeta, lines(modelHeader, "2025-07-01,,prompt,0.30"), "model_prices.csv:2: model is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			card, err := pricing.Parse(tc.meta, tc.model)
			if err == nil {
				t.Fatalf("Parse = %v, nil; want an error with a line starting %q", card, tc.want)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, tc.want) {
					return
				}
			}
			t.Errorf("Parse error:\n%v\nhas no line starting %q", err, tc.want)
		})
	}
}

// TestParseReportsEveryProblem: an operator sees every problem of both files at once, one line
// each, in the order of the files' lines.
func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	meta := lines(
		"# Meta's rate card",
		metaHeader,
		"2025-07-01,Brazil,marketing,0.0625",
		"2025-07-01,Brazil,utility,-1",
		"2025-07-01,Brazil,authentication,0.0068",
		"2025-07-01,Brazil,service,0",
		"2025-07-01,Brazil,bulk,0.01",
	)
	model := lines(modelHeader, "2025-07-01,gemini-2.5-flash,prompt,0.30", "2025-07-01,gemini-2.5-flash,output,2.50")
	_, err := pricing.Parse(meta, model)
	if err == nil {
		t.Fatal("Parse accepted files with problems")
	}
	want := []string{
		`meta_rates.csv:3: market "Brazil" effective 2025-07-01 has no utility row`,
		`meta_rates.csv:4: usd: amount "-1" is negative`,
		`meta_rates.csv:7: category "bulk" is not one of marketing, marketing_lite, utility, authentication, authentication_international, service`,
		`model_prices.csv:2: model "gemini-2.5-flash" effective 2025-07-01 has no audio row`,
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("Parse error lines (-want, +got):\n%s", diff)
	}
}

// TestMessagePrice: the row in effect on the message's UTC day prices it; a change takes effect
// at 00:00 UTC, whatever the clock of the time given.
func TestMessagePrice(t *testing.T) {
	t.Parallel()
	rows := []string{metaHeader}
	rows = append(rows, marketRows("2025-07-01", "Brazil", "0.0625")...)
	rows = append(rows, marketRows("2025-10-01", "Brazil", "0.0500")...)
	rows = append(rows, marketRows("2025-07-01", "Other", "0.0604")...)
	meta := lines(rows...)
	card, err := pricing.Parse(meta, goodModels)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	cases := []struct {
		name             string
		market, category string
		at               time.Time
		want             string // "" for no price
	}{
		{"before the card", "Brazil", pricing.CategoryMarketing, day("2025-06-30T23:59:59Z"), ""},
		{"first day", "Brazil", pricing.CategoryMarketing, day("2025-07-01T00:00:00Z"), "0.0625"},
		{"eve of the change, 23:30 UTC", "Brazil", pricing.CategoryMarketing, day("2025-09-30T23:30:00Z"), "0.0625"},
		{"eve of the change in UTC, already the day in Berlin", "Brazil", pricing.CategoryMarketing, day("2025-10-01T00:30:00+02:00"), "0.0625"},
		{"day of the change in UTC, still the eve in São Paulo", "Brazil", pricing.CategoryMarketing, day("2025-09-30T22:30:00-03:00"), "0.0500"},
		{"day of the change", "Brazil", pricing.CategoryMarketing, day("2025-10-01T00:00:00Z"), "0.0500"},
		{"years later", "Brazil", pricing.CategoryMarketing, day("2030-01-01T00:00:00Z"), "0.0500"},
		{"other category, old row", "Brazil", pricing.CategoryUtility, day("2025-08-01T00:00:00Z"), "0.0068"},
		{"market only on the first date", "Other", pricing.CategoryMarketing, day("2026-01-01T00:00:00Z"), "0.0604"},
		{"market not on the card", "Chile", pricing.CategoryMarketing, day("2025-08-01T00:00:00Z"), ""},
		{"category not on the card", "Brazil", pricing.CategoryAuthenticationInternational, day("2025-08-01T00:00:00Z"), ""},
		{"unknown category", "Brazil", "bulk", day("2025-08-01T00:00:00Z"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := card.MessagePrice(tc.market, tc.category, tc.at)
			switch {
			case tc.want == "" && ok:
				t.Errorf("MessagePrice(%q, %q, %v) = %v; want no price", tc.market, tc.category, tc.at, got)
			case tc.want != "" && (!ok || got.String() != tc.want):
				t.Errorf("MessagePrice(%q, %q, %v) = %v, %v; want %s", tc.market, tc.category, tc.at, got, ok, tc.want)
			}
		})
	}
	if diff := cmp.Diff([]string{"Brazil", "Other"}, card.Markets()); diff != "" {
		t.Errorf("Markets (-want, +got):\n%s", diff)
	}
	wantDates := []time.Time{day("2025-07-01T00:00:00Z"), day("2025-10-01T00:00:00Z")}
	if diff := cmp.Diff(wantDates, card.EffectiveDates()); diff != "" {
		t.Errorf("EffectiveDates (-want, +got):\n%s", diff)
	}
}

// TestCardListsAreCopies: a caller changing what Markets returned changes nothing of the card.
func TestCardListsAreCopies(t *testing.T) {
	t.Parallel()
	card, err := pricing.Parse(goodMeta, goodModels)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	card.Markets()[0] = "Chile"
	card.EffectiveDates()[0] = time.Time{}
	if got := card.Markets(); got[0] != "Brazil" {
		t.Errorf("Markets after a caller's change = %v, want [Brazil]", got)
	}
	if got := card.EffectiveDates(); !got[0].Equal(day("2025-07-01T00:00:00Z")) {
		t.Errorf("EffectiveDates after a caller's change = %v, want [2025-07-01]", got)
	}
}

func TestTokenPrice(t *testing.T) {
	t.Parallel()
	rows := append([]string{modelHeader}, modelRows("2025-07-01", "gemini-2.5-flash")...)
	rows = append(rows,
		"2025-07-01,gemini-2.5-flash-lite,prompt,0.10",
		"2025-07-01,gemini-2.5-flash-lite,audio,0.30",
		"2025-07-01,gemini-2.5-flash-lite,output,0.40",
		"2026-01-01,gemini-2.5-flash,prompt,0.25",
		"2026-01-01,gemini-2.5-flash,audio,0.90",
		"2026-01-01,gemini-2.5-flash,output,2.00",
	)
	models := lines(rows...)
	card, err := pricing.Parse(goodMeta, models)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	july := day("2025-07-15T00:00:00Z")
	cases := []struct {
		name, model, kind string
		at                time.Time
		perMillion        string // "" for no price
	}{
		{"exact name", "gemini-2.5-flash", "prompt", july, "0.30"},
		{"exact name, audio", "gemini-2.5-flash", "audio", july, "1.00"},
		{"version suffix", "gemini-2.5-flash-001", "output", july, "2.50"},
		{"preview suffix", "gemini-2.5-flash-preview-05-20", "prompt", july, "0.30"},
		{"longest prefix wins", "gemini-2.5-flash-lite-001", "output", july, "0.40"},
		{"exact longer name", "gemini-2.5-flash-lite", "prompt", july, "0.10"},
		{"new effective date", "gemini-2.5-flash-001", "prompt", day("2026-01-01T00:00:00Z"), "0.25"},
		{"eve of the new date", "gemini-2.5-flash", "prompt", day("2025-12-31T23:30:00Z"), "0.30"},
		{"before the prices", "gemini-2.5-flash", "prompt", day("2025-06-30T00:00:00Z"), ""},
		{"unknown model", "gemini-1.5-pro", "prompt", july, ""},
		{"a known name inside, not at the start", "models/gemini-2.5-flash", "prompt", july, ""},
		{"shorter than a known name", "gemini-2.5", "prompt", july, ""},
		{"unknown kind", "gemini-2.5-flash", "video", july, ""},
		{"empty model", "", "prompt", july, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := card.TokenPrice(tc.model, tc.kind, tc.at)
			if tc.perMillion == "" {
				if ok {
					t.Errorf("TokenPrice(%q, %q) = %v; want no price", tc.model, tc.kind, got)
				}
				return
			}
			if want := usd(t, tc.perMillion); !ok || got*1_000_000 != want {
				t.Errorf("TokenPrice(%q, %q) = %v, %v; want %v per million tokens", tc.model, tc.kind, got, ok, want)
			}
		})
	}
}

// TestMarketOfPhone: a number's market is its longest calling code's, and the country of the
// number (when given) is in the same market, so a BSUID and a phone number price alike.
func TestMarketOfPhone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		number, iso, want string
	}{
		{"6281234567890", "ID", "Indonesia"},
		{"+1 415 555 0100", "US", "North America"},
		{"+1 (613) 555-0100", "CA", "North America"},
		{"971501234567", "AE", "United Arab Emirates"},
		{"4915112345678", "DE", "Germany"},
		{"+44 20 7946 0958", "GB", "United Kingdom"},
		{"919876543210", "IN", "India"},
		{"5511987654321", "BR", "Brazil"},
		{"5215512345678", "MX", "Mexico"},
		{"972501234567", "IL", "Israel"},
		{"2348031234567", "NG", "Nigeria"},
		{"27821234567", "ZA", "South Africa"},
		{"966501234567", "SA", "Saudi Arabia"},
		{"201001234567", "EG", "Egypt"},
		{"79161234567", "RU", "Russia"},
		{"77011234567", "KZ", "Other"},
		{"905321234567", "TR", "Turkey"},
		{"18095551234", "DO", "Rest of Latin America"},
		{"593991234567", "EC", "Rest of Latin America"},
		{"233201234567", "GH", "Rest of Africa"},
		{"263771234567", "ZW", "Rest of Africa"},
		{"61412345678", "AU", "Rest of Asia Pacific"},
		{"85291234567", "HK", "Rest of Asia Pacific"},
		{"48501234567", "PL", "Rest of Central & Eastern Europe"},
		{"306912345678", "GR", "Rest of Central & Eastern Europe"},
		{"351912345678", "PT", "Rest of Western Europe"},
		{"41791234567", "CH", "Rest of Western Europe"},
		{"97433123456", "QA", "Rest of Middle East"},
		{"96279123456", "JO", "Rest of Middle East"},
		{"6791234567", "", "Other"},    // Fiji
		{"0044207946095", "", "Other"}, // a dialling prefix (00) is not international form
		{"", "", "Other"},
		{"+", "", "Other"},
		{"no digits", "", "Other"},
	}
	for _, tc := range cases {
		t.Run(tc.number, func(t *testing.T) {
			t.Parallel()
			if got := pricing.MarketOfPhone(tc.number); got != tc.want {
				t.Errorf("MarketOfPhone(%q) = %q, want %q", tc.number, got, tc.want)
			}
			if tc.iso == "" {
				return
			}
			if got := pricing.MarketOfCountry(tc.iso); got != tc.want {
				t.Errorf("MarketOfCountry(%q) = %q, want %q, as its numbers", tc.iso, got, tc.want)
			}
		})
	}
}

func TestMarketOfCountry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		iso, want string
	}{
		{"ID", "Indonesia"},
		{"us", "North America"},
		{"BR", "Brazil"},
		{"Gb", "United Kingdom"},
		{" de ", "Germany"},
		{"PR", "Rest of Latin America"},
		{"KE", "Rest of Africa"},
		{"ZZ", "Other"},
		{"", "Other"},
		{"IDN", "Other"},
	}
	for _, tc := range cases {
		if got := pricing.MarketOfCountry(tc.iso); got != tc.want {
			t.Errorf("MarketOfCountry(%q) = %q, want %q", tc.iso, got, tc.want)
		}
	}
}

// TestBillPriceAndCallPrice: a market the card does not price is billed at "Other"'s price; a
// call costs its prompt tokens (audio apart) and output tokens at the model's prices; a
// recipient's market is their phone's, else their BSUID's country's.
func TestBillPriceAndCallPrice(t *testing.T) {
	t.Parallel()
	card, err := pricing.Load()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	other, _ := card.MessagePrice("Other", pricing.CategoryUtility, at)
	if p, ok := card.BillPrice("Atlantis", pricing.CategoryUtility, at); !ok || p != other {
		t.Errorf("BillPrice(Atlantis) = %v, %v; want Other's %v", p, ok, other)
	}
	prompt, _ := card.TokenPrice("gemini-2.5-flash", "prompt", at)
	audio, _ := card.TokenPrice("gemini-2.5-flash", "audio", at)
	output, _ := card.TokenPrice("gemini-2.5-flash", "output", at)
	if got, want := card.CallPrice("gemini-2.5-flash", at, 1000, 400, 100), prompt*600+audio*400+output*100; got != want {
		t.Errorf("CallPrice = %v, want %v", got, want)
	}
	for _, tc := range []struct{ phone, user, want string }{
		{"6281234567890", "BR.abc", "Indonesia"}, {"", "BR.abc", "Brazil"}, {"", "", "Other"},
	} {
		if got := pricing.MarketOf(tc.phone, tc.user); got != tc.want {
			t.Errorf("MarketOf(%q, %q) = %q, want %q", tc.phone, tc.user, got, tc.want)
		}
	}
}
