package i18n

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var placeholderRE = regexp.MustCompile(`\{[a-z_]+\}`)

func placeholders(s string) []string {
	p := placeholderRE.FindAllString(s, -1)
	slices.Sort(p)
	return p
}

func TestEveryKeyExistsInEveryLanguage(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages() {
		for _, key := range Keys() {
			s, ok := catalog[lang][key]
			if !ok || strings.TrimSpace(s) == "" {
				t.Errorf("%s/%s: missing", lang, key)
			}
			if got := Text(lang, key, "name", "Agus", "intent", "create_booking", "sender", "Agus", "business", "Acme", "spent", "8.00", "budget", "10.00"); got == "" || strings.Contains(got, "{") {
				t.Errorf("%s/%s renders %q", lang, key, got)
			}
		}
		if n := len(catalog[lang]); n != len(Keys()) {
			t.Errorf("%s has %d texts, Keys() has %d: a key is missing from Keys()", lang, n, len(Keys()))
		}
	}
	if len(catalog) != len(Languages()) {
		t.Errorf("catalog has %d languages, Languages() %d", len(catalog), len(Languages()))
	}
}

func TestPlaceholdersAreIdenticalAcrossLanguages(t *testing.T) {
	t.Parallel()
	for _, key := range Keys() {
		want := placeholders(catalog[Default][key])
		for _, lang := range Languages() {
			if diff := cmp.Diff(want, placeholders(catalog[lang][key])); diff != "" {
				t.Errorf("%s/%s placeholders (-en, +%s):\n%s", lang, key, lang, diff)
			}
		}
	}
	if got := placeholders(catalog[Default][WelcomeName]); !slices.Equal(got, []string{"{name}"}) {
		t.Errorf("welcome_name placeholders = %v, want [{name}]", got)
	}
}

func TestButtonTitlesFitMetaLimit(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages() {
		for _, key := range []Key{ButtonConfirm, ButtonCancel, ButtonChoose} {
			if n := utf8.RuneCountInString(Text(lang, key)); n > 20 {
				t.Errorf("%s/%s is %d characters, Meta allows 20", lang, key, n)
			}
		}
	}
}

func TestTextFallsBackToEnglishAndFillsPlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lang string
		key  Key
		args []string
		want string
	}{
		{"supported language", "fr", Done, nil, "C'est fait. Merci !"},
		{"unknown language is English", "de", Done, nil, "Done. Thank you!"},
		{"empty language is English", "", Done, nil, "Done. Thank you!"},
		{"region code is not matched", "pt_BR", Done, nil, "Done. Thank you!"},
		{"named placeholder", "id", WelcomeName, []string{"name", "Pak Agus"},
			"Selamat datang, Pak Agus! Anda sekarang sudah menjadi anggota. Ada yang bisa kami bantu?"},
		{"value is not expanded again", "en", WelcomeName, []string{"name", "{name}"},
			"Welcome, {name}! You are now a member. How can we help you?"},
		{"unpaired trailing arg is ignored", "en", WelcomeName, []string{"name", "Ann", "x"},
			"Welcome, Ann! You are now a member. How can we help you?"},
		{"missing value leaves the placeholder", "en", WelcomeName, nil,
			"Welcome, {name}! You are now a member. How can we help you?"},
		{"unknown key is its name", "en", Key("no_such_key"), nil, "no_such_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Text(tt.lang, tt.key, tt.args...); got != tt.want {
				t.Errorf("Text(%q, %q, %q) = %q, want %q", tt.lang, tt.key, tt.args, got, tt.want)
			}
		})
	}
}

func TestLanguagesAreTheContractsAndACopy(t *testing.T) {
	t.Parallel()
	want := []string{"en", "fr", "ar", "es", "pt", "id"}
	got := Languages()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Languages() (-want, +got):\n%s", diff)
	}
	got[0] = "xx"
	if Languages()[0] != "en" {
		t.Error("Languages() returned the package's own slice")
	}
	for _, l := range want {
		if !Supported(l) {
			t.Errorf("Supported(%q) = false", l)
		}
	}
	for _, l := range []string{"", "EN", "de", "en_US"} {
		if Supported(l) {
			t.Errorf("Supported(%q) = true", l)
		}
	}
}

func TestArabicTextsAreInArabicScript(t *testing.T) {
	t.Parallel()
	latin := regexp.MustCompile(`[A-Za-z]`)
	for _, key := range Keys() {
		if s := placeholderRE.ReplaceAllString(catalog["ar"][key], ""); latin.MatchString(s) {
			t.Errorf("ar/%s has Latin letters: %q", key, s)
		}
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"  Yes!! ", "yes"},
		{"OK 👍", "ok"},
		{"Sí", "si"},
		{"NÃO", "nao"},
		{"d’accord", "d accord"},
		{"نَعَم", "نعم"},
		{"أجل", "اجل"},
		{"إلغاء", "الغاء"},
		{"نعـــم", "نعم"},
		{"ya\u200d", "ya"},
		{"Yes, confirm", "yes confirm"},
		{"👍", ""},
		{"12 buses", "12 buses"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsConfirmAndIsReject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text            string
		confirm, reject bool
	}{
		// The contract's words.
		{"ya", true, false},
		{"yes", true, false},
		{"oui", true, false},
		{"sí", true, false},
		{"sim", true, false},
		{"نعم", true, false},
		{"tidak", false, true},
		{"no", false, true},
		{"non", false, true},
		{"não", false, true},
		{"لا", false, true},
		// Variants: case, accents, punctuation, emoji, spacing.
		{"Yes!", true, false},
		{"  YES.  ", true, false},
		{"si", true, false},
		{"Sí.", true, false},
		{"Iya", true, false},
		{"oke 👍", true, false},
		{"okay", true, false},
		{"yes please", true, false},
		{"d'accord", true, false},
		{"نَعَم", true, false},
		{"أجل", true, false},
		{"nao", false, true},
		{"No.", false, true},
		{"Batal", false, true},
		{"nggak", false, true},
		// Indonesian as typed in chats (issue 22): sip, yoi, bener, oke, ok; bukan, salah, batal.
		{"sip", true, false},
		{"Sip!", true, false},
		{"yoi", true, false},
		{"bener", true, false},
		{"oke", true, false},
		{"OK", true, false},
		{"bukan", false, true},
		{"salah", false, true},
		{"batal", false, true},
		{"bukan yang itu", false, false},
		{"إلغاء", false, true},
		{"No thanks!", false, true},
		// The localized button titles typed out.
		{"Yes, confirm", true, false},
		{"Ya, konfirmasi", true, false},
		{"نعم، تأكيد", true, false},
		{"No, cancel", false, true},
		{"Tidak, batalkan", false, true},
		{"Não, cancelar", false, true},
		// Not whole-message answers: corrections or other turns.
		{"yes but change the date", false, false},
		{"ya, tapi ganti tanggalnya", false, false},
		{"no, the 12th", false, false},
		{"yesss", false, false},
		{"yes yes", false, false},
		{"👍", false, false},
		{"", false, false},
		{"   ", false, false},
		{"maybe", false, false},
		{"nonsense", false, false},
		{"tidak jadi besok, lusa saja", false, false},
	}
	for _, tt := range tests {
		if got := IsConfirm(tt.text); got != tt.confirm {
			t.Errorf("IsConfirm(%q) = %v, want %v", tt.text, got, tt.confirm)
		}
		if got := IsReject(tt.text); got != tt.reject {
			t.Errorf("IsReject(%q) = %v, want %v", tt.text, got, tt.reject)
		}
	}
}

func TestNoWordBothConfirmsAndRejects(t *testing.T) {
	t.Parallel()
	for w := range confirmWords {
		if rejectWords[w] {
			t.Errorf("%q both confirms and rejects", w)
		}
		if w == "" || Normalize(w) != w {
			t.Errorf("confirm word %q is not normalised", w)
		}
	}
	for w := range rejectWords {
		if w == "" || Normalize(w) != w {
			t.Errorf("reject word %q is not normalised", w)
		}
	}
}
