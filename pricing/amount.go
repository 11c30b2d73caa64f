package pricing

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Amount is an exact amount of US dollars in picodollars (1e-12 USD): Meta's prices (4 decimals)
// and token prices (per million tokens, so 1e-6 of a price with up to 6 decimals) are whole
// numbers of it, so sums are exact. int64 holds about 9.2 million USD.
type Amount int64

// picoDigits is the number of decimals an Amount holds.
const picoDigits = 12

// picoPerUSD is one dollar in picodollars.
const picoPerUSD = 1_000_000_000_000

// minStringDecimals is the fewest decimals String writes: Meta's prices have four, so a price
// always reads as Meta writes it.
const minStringDecimals = 4

// ParseUSD reads a non-negative decimal number of dollars ("0.0107", "12", "0.000000000001")
// exactly. It refuses an empty string, a sign, an exponent, more than 12 decimals (less than a
// picodollar) and amounts past what an Amount holds, rather than rounding any of them.
func ParseUSD(s string) (Amount, error) {
	if s == "" {
		return 0, errors.New("amount is empty")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("amount %q is negative", s)
	}
	whole, frac, hasPoint := strings.Cut(s, ".")
	if !allDigits(whole) || (hasPoint && !allDigits(frac)) {
		return 0, fmt.Errorf("amount %q is not a decimal number (digits, optionally one '.' and more digits)", s)
	}
	if len(frac) > picoDigits {
		return 0, fmt.Errorf("amount %q has more than %d decimals", s, picoDigits)
	}
	// Leading zeros say nothing; past 7 digits the dollars alone overflow (max ~9,223,372).
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > 7 {
		return 0, fmt.Errorf("amount %q is more than an Amount holds", s)
	}
	dollars, _ := strconv.ParseUint("0"+whole, 10, 64) // at most 7 digits: cannot fail
	fracPico, _ := strconv.ParseUint(frac+strings.Repeat("0", picoDigits-len(frac)), 10, 64)
	total := dollars*picoPerUSD + fracPico // < 1e19: fits a uint64
	if total > math.MaxInt64 {
		return 0, fmt.Errorf("amount %q is more than an Amount holds", s)
	}
	return Amount(total), nil
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String is the exact decimal value in dollars with at least four decimals and no trailing zeros
// past the fourth: 0 is "0.0000", 0.0107 USD "0.0107", 3e-7 USD "0.0000003"; a negative amount
// has a leading "-".
func (a Amount) String() string {
	neg, mag := a < 0, magnitude(int64(a))
	digits := fmt.Sprintf("%d.%012d", mag/picoPerUSD, mag%picoPerUSD)
	digits = strings.TrimRight(digits, "0")
	if short := strings.IndexByte(digits, '.') + 1 + minStringDecimals - len(digits); short > 0 {
		digits += strings.Repeat("0", short)
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// Round is the amount in dollars with exactly decimals decimals (0 when decimals is negative),
// halves rounded away from zero: 12.345 is "12.35" at 2, -12.345 "-12.35". An amount that rounds
// to zero has no sign.
func (a Amount) Round(decimals int) string {
	decimals = max(decimals, 0)
	mag := magnitude(int64(a))
	kept := min(decimals, picoDigits)
	unit := pow10(picoDigits - kept)
	q, r := mag/unit, mag%unit
	if r >= unit-r { // r*2 >= unit, without overflow
		q++
	}
	scale := pow10(kept)
	s := strconv.FormatUint(q/scale, 10)
	if decimals > 0 {
		s += "." + fmt.Sprintf("%0*d", kept, q%scale) + strings.Repeat("0", decimals-kept)
	}
	if a < 0 && q != 0 {
		return "-" + s
	}
	return s
}

// Fraction is a*num/den, rounded to the nearest picodollar with halves away from zero (half up,
// for the non-negative amounts of budget shares and thresholds such as 80 %: Fraction(4, 5)).
// The product is computed in 128 bits, so it never overflows on the way; a result past what an
// Amount holds (only possible when |num| > |den|) saturates at the largest or smallest Amount.
// It panics when den is 0, like integer division.
func (a Amount) Fraction(num, den int64) Amount {
	if den == 0 {
		panic("pricing: Amount.Fraction with a zero denominator")
	}
	neg := (a < 0) != (num < 0) != (den < 0)
	d := magnitude(den)
	hi, lo := bits.Mul64(magnitude(int64(a)), magnitude(num))
	if hi >= d { // the quotient needs more than 64 bits
		return saturated(neg)
	}
	q, r := bits.Div64(hi, lo, d)
	if r >= d-r { // r*2 >= d, without overflow
		if q == math.MaxUint64 {
			return saturated(neg)
		}
		q++
	}
	switch {
	case q == 0:
		return 0
	case neg && q <= 1<<63:
		return Amount(-int64(q-1)) - 1 // q = 2^63 is MinInt64, which -int64(q) cannot spell
	case !neg && q <= math.MaxInt64:
		return Amount(q)
	}
	return saturated(neg)
}

// saturated is the Amount furthest from zero on the result's side.
func saturated(neg bool) Amount {
	if neg {
		return math.MinInt64
	}
	return math.MaxInt64
}

// magnitude is |x| as a uint64, which holds |MinInt64| too.
func magnitude(x int64) uint64 {
	if x < 0 {
		return uint64(-(x + 1)) + 1
	}
	return uint64(x)
}

// pow10 is 10^n for 0 <= n <= 19.
func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}
