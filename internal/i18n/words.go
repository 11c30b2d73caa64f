package i18n

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Words that answer a pending confirmation, as people type them. They are stored normalised,
// and the localised button titles (ButtonConfirm, ButtonCancel) are added to them, so a user
// who types "Yes, confirm" instead of tapping the button is understood too.
var (
	confirmWords = wordSet(
		// en
		"yes", "y", "yeah", "yep", "yup", "ok", "okay", "sure", "confirm", "confirmed", "yes please",
		// fr
		"oui", "ouais", "d'accord", "confirmer", "oui merci",
		// ar: yes, indeed, agreed, confirm, all right
		"نعم", "أجل", "موافق", "تأكيد", "حسنًا",
		// es
		"sí", "vale", "claro", "de acuerdo", "confirmar", "confirmo",
		// pt
		"sim", "confirmo",
		// id
		"ya", "iya", "ok", "oke", "sip", "yoi", "setuju", "betul", "benar", "bener", "boleh", "lanjut", "lanjutkan",
		"konfirmasi",
	)
	rejectWords = wordSet(
		// en
		"no", "n", "nope", "nah", "cancel", "no thanks",
		// fr
		"non", "annuler", "non merci",
		// ar: no, certainly not, cancel
		"لا", "كلا", "إلغاء",
		// es
		"cancelar", "no gracias",
		// pt
		"não", "não obrigado", "não obrigada",
		// id
		"tidak", "tdk", "gak", "ga", "nggak", "enggak", "ngga", "bukan", "salah", "batal", "batalkan", "jangan",
	)
)

func init() {
	// The button titles are answers too; done at init because they come from the catalog.
	for _, lang := range languages {
		confirmWords[Normalize(Text(lang, ButtonConfirm))] = true
		rejectWords[Normalize(Text(lang, ButtonCancel))] = true
	}
}

func wordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[Normalize(w)] = true
	}
	return m
}

// IsConfirm reports whether text, as a whole, confirms a pending action: after Normalize it
// must equal one of these (or a language's ButtonConfirm title):
//
//	en  yes, y, yeah, yep, yup, ok, okay, sure, confirm, confirmed, yes please
//	fr  oui, ouais, d'accord, confirmer, oui merci
//	ar  نعم, أجل, موافق, تأكيد, حسنًا
//	es  sí (si), vale, claro, de acuerdo, confirmar, confirmo
//	pt  sim, confirmo
//	id  ya, iya, ok, oke, sip, yoi, setuju, betul, benar, bener, boleh, lanjut, lanjutkan, konfirmasi
//
// So "Yes!", "OK 👍", "SÍ" and "oui." confirm; "yes but change the date", "yesss" and a lone
// emoji do not (they are corrections, handled as a fresh turn).
func IsConfirm(text string) bool { return confirmWords[Normalize(text)] }

// IsReject reports whether text, as a whole, rejects a pending action: after Normalize it
// must equal one of these (or a language's ButtonCancel title):
//
//	en  no, n, nope, nah, cancel, no thanks
//	fr  non, annuler, non merci
//	ar  لا, كلا, إلغاء
//	es  no, cancelar, no gracias
//	pt  não (nao), cancelar, não obrigado, não obrigada
//	id  tidak, tdk, gak, ga, nggak, enggak, ngga, bukan (not that), salah (wrong), batal, batalkan,
//	    jangan
func IsReject(text string) bool { return rejectWords[Normalize(text)] }

// Normalize prepares a message for whole-message word matching: it decomposes the text
// (NFD) and drops combining marks, so accents (sí → si, não → nao) and Arabic short vowels
// and hamza seats (أجل → اجل) do not matter; drops format characters (zero-width joiners,
// direction marks) and the Arabic tatweel; lower-cases; turns punctuation, symbols and emoji
// into spaces; then collapses and trims spaces. Letters and digits are kept as they are.
func Normalize(text string) string {
	var b strings.Builder
	space := false
	for _, r := range norm.NFD.String(text) {
		switch {
		case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Cf, r), r == '\u0640':
			continue
		case unicode.IsLetter(r), unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(unicode.ToLower(r))
		default:
			space = true
		}
	}
	return norm.NFC.String(b.String())
}
