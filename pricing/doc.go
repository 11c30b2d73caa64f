// Package pricing holds wapipe's prices as data: Meta's per-message rate card for WhatsApp (per
// message since 2025-07-01, by pricing market and template category, each row with the date it
// takes effect) and the LLM's token prices. Both are CSV files embedded in every binary
// (meta_rates.csv, model_prices.csv), so a cost or a budget is computed the same way everywhere
// and without a network call; Load parses and validates them, and the package's test runs Load,
// so a bad edit fails the build's tests, not a month's bill.
//
// Amounts are exact: an Amount is a whole number of picodollars (1e-12 USD). Meta's prices (four
// decimals) and a token's price (a per-million price with up to six decimals, divided by a
// million) are whole numbers of it, so sums never drift the way float64 sums do; Round and
// String turn one into text only at the edge.
//
// MarketOfPhone and MarketOfCountry say which of Meta's pricing markets a recipient is in (by
// country calling code, or by the country a BSUID starts with); MessagePrice falls back to
// nothing on its own, so a caller whose market has no row prices it as "Other".
//
// An operator updates the card by adding rows with a new effective_from: for Meta, all of
// marketing, utility, authentication and service of each market that changes; for a model, all
// three kinds. The old rows stay, so past months price as they were: a price is the row with the
// latest effective_from on or before the message's UTC day.
package pricing
