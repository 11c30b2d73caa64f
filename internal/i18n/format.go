package i18n

import (
	"time"

	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// Values shown to people (a confirmation's data lines) are written the way their language writes
// them, by CLDR's data through golang.org/x/text: digits and separators ("15.000.000" in
// Indonesian, "15 000 000" in French, Arabic-Indic digits in Arabic), a currency's symbol and
// its cash digits (IDR none, EUR two), and long dates ("1 Maret 2026"). What the business
// receives stays canonical (plain numbers, ISO dates): these only change what is read.

// printer is the message printer of lang (English when lang is not supported).
func printer(lang string) *message.Printer {
	if !Supported(lang) {
		lang = Default
	}
	return message.NewPrinter(language.MustParse(lang))
}

// FormatNumber writes v in lang: its digits and separators, as many decimals as v has (up to
// six).
func FormatNumber(lang string, v float64) string {
	return printer(lang).Sprint(number.Decimal(v, number.MaxFractionDigits(6)))
}

// currencyPatterns place the symbol as CLDR's standard currency pattern of each language does:
// before the amount (en, id, pt: with a space in pt) or after it with a no-break space (fr, es,
// ar).
var currencyPatterns = map[string]struct {
	before bool
	space  string
}{
	"en": {true, ""}, "id": {true, ""}, "pt": {true, "\u00a0"},
	"fr": {false, "\u00a0"}, "es": {false, "\u00a0"}, "ar": {false, "\u00a0"},
}

// FormatMoney writes v of the ISO 4217 currency code in lang: the currency's symbol in that
// language and its cash digits ("Rp15.000.000" for IDR in Indonesian, "15 000 000 IDR" in
// French). An unknown code writes the number alone, followed by the code.
func FormatMoney(lang, code string, v float64) string {
	if !Supported(lang) {
		lang = Default
	}
	unit, err := currency.ParseISO(code)
	if err != nil {
		return FormatNumber(lang, v) + " " + code
	}
	p := printer(lang)
	scale, _ := currency.Cash.Rounding(unit)
	amount := p.Sprint(number.Decimal(v, number.Scale(scale)))
	symbol := p.Sprint(currency.Symbol(unit))
	pat := currencyPatterns[lang]
	space := pat.space
	if space == "" && isLetters(symbol) && len(symbol) == 3 {
		// An ISO code standing for the symbol ("IDR 15,000,000") is set apart, as CLDR does.
		space = "\u00a0"
	}
	if pat.before {
		return symbol + space + amount
	}
	return amount + space + symbol
}

func isLetters(s string) bool {
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return s != ""
}

// months are the months' names in each language, as its long dates write them.
var months = map[string][12]string{
	"en": {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
	"fr": {"janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"},
	"ar": {"يناير", "فبراير", "مارس", "أبريل", "مايو", "يونيو", "يوليو", "أغسطس", "سبتمبر", "أكتوبر", "نوفمبر", "ديسمبر"},
	"es": {"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"},
	"pt": {"janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro", "novembro", "dezembro"},
	"id": {"Januari", "Februari", "Maret", "April", "Mei", "Juni", "Juli", "Agustus", "September", "Oktober", "November", "Desember"},
}

// FormatDate writes the day of t as lang's long date: "March 1, 2026", "1 mars 2026",
// "1 de marzo de 2026", "1 de março de 2026", "1 Maret 2026", "١ مارس ٢٠٢٦".
func FormatDate(lang string, t time.Time) string {
	if !Supported(lang) {
		lang = Default
	}
	p := printer(lang)
	day := p.Sprint(number.Decimal(t.Day()))
	year := p.Sprint(number.Decimal(t.Year(), number.NoSeparator()))
	month := months[lang][t.Month()-1]
	switch lang {
	case "en":
		return month + " " + day + ", " + year
	case "es", "pt":
		return day + " de " + month + " de " + year
	}
	return day + " " + month + " " + year
}

// yesNo are the words for a true and a false value in each language.
var yesNo = map[string][2]string{
	"en": {"yes", "no"}, "fr": {"oui", "non"}, "ar": {"نعم", "لا"}, "es": {"sí", "no"}, "pt": {"sim", "não"}, "id": {"ya", "tidak"},
}

// FormatBool writes b as lang's yes or no.
func FormatBool(lang string, b bool) string {
	if !Supported(lang) {
		lang = Default
	}
	if b {
		return yesNo[lang][0]
	}
	return yesNo[lang][1]
}
