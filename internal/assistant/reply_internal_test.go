package assistant

import (
	"testing"

	"github.com/wapipe/wapipe/internal/tenant"
)

// TestDataLines: the data lines under a confirmation are the intent's fields with a value, in the
// file's order, numbers and booleans written for people (here in English); a string that could
// draw a line of its own or reorder the text is quoted.
func TestDataLines(t *testing.T) {
	t.Parallel()
	in := tenant.Intent{Name: "create_booking", Fields: tenant.Fields{
		{Name: "client", Type: tenant.FieldString}, {Name: "date", Type: tenant.FieldDate}, {Name: "route", Type: tenant.FieldString},
		{Name: "seats", Type: tenant.FieldInteger}, {Name: "price", Type: tenant.FieldNumber}, {Name: "ac", Type: tenant.FieldBoolean},
	}}
	tests := []struct {
		name string
		data map[string]any
		want string
	}{
		{"file order, absent fields left out", map[string]any{"price": 1.5, "client": "Pak Agus", "seats": int64(40)},
			"client: Pak Agus\nseats: 40\nprice: 1.5"},
		{"numbers grouped, booleans in words, a huge number as JSON", map[string]any{"seats": int64(15000000), "price": 1e21, "ac": false},
			"seats: 15,000,000\nprice: 1e+21\nac: no"},
		{"a line break is quoted", map[string]any{"client": "Pak Agus\ndate: 2027-03-01", "date": "2027-03-09"},
			"client: \"Pak Agus\\ndate: 2027-03-01\"\ndate: March 9, 2027"},
		{"a direction override is quoted", map[string]any{"route": "Jakarta \u202eagnudnaB"},
			"route: \"Jakarta \\u202eagnudnaB\""},
		{"letters of any script stay as they are", map[string]any{"client": "جولات السوق", "route": "Ciamis – Tasikmalaya"},
			"client: جولات السوق\nroute: Ciamis – Tasikmalaya"},
		{"nothing", map[string]any{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := dataLines("en", "", in, actionData(in, tt.data)); got != tt.want {
				t.Errorf("dataLines = %q, want %q", got, tt.want)
			}
		})
	}
	if got := actionData(in, map[string]any{"client": "x", "callback": "https://evil.example", "date": nil}); len(got) != 1 || got["client"] != "x" {
		t.Errorf("actionData = %v, want the declared fields with a value only", got)
	}
}

// TestDataLinesInEachLanguage is the confirmation's data lines of a booking, golden, in each of
// the six languages: the file's labels, the price in the tenant's currency (IDR, no decimals),
// the date spelled, the seats grouped, the air conditioning in words. The action still carries
// 15000000, "2026-03-01", 1250 and true (TestDataLines' canonical data).
func TestDataLinesInEachLanguage(t *testing.T) {
	t.Parallel()
	in := tenant.Intent{Name: "create_booking", Fields: tenant.Fields{
		{Name: "client", Type: tenant.FieldString},
		{Name: "price", Type: tenant.FieldMoney, Label: map[string]string{"en": "Price", "fr": "Prix", "ar": "السعر", "es": "Precio", "pt": "Preço", "id": "Harga"}},
		{Name: "date", Type: tenant.FieldDate, Label: map[string]string{"en": "Date", "fr": "Date", "ar": "التاريخ", "es": "Fecha", "pt": "Data", "id": "Tanggal"}},
		{Name: "seats", Type: tenant.FieldInteger},
		{Name: "ac", Type: tenant.FieldBoolean, Label: map[string]string{"id": "AC"}},
	}}
	data := map[string]any{"client": "Pak Agus", "price": float64(15000000), "date": "2026-03-01", "seats": int64(1250), "ac": true}
	nb := "\u00a0"
	want := map[string]string{
		"en": "client: Pak Agus\nPrice: IDR" + nb + "15,000,000\nDate: March 1, 2026\nseats: 1,250\nac: yes",
		"fr": "client: Pak Agus\nPrix: 15" + nb + "000" + nb + "000" + nb + "IDR\nDate: 1 mars 2026\nseats: 1" + nb + "250\nac: oui",
		"ar": "client: Pak Agus\nالسعر: ١٥٬٠٠٠٬٠٠٠" + nb + "IDR\nالتاريخ: ١ مارس ٢٠٢٦\nseats: ١٬٢٥٠\nac: نعم",
		"es": "client: Pak Agus\nPrecio: 15.000.000" + nb + "IDR\nFecha: 1 de marzo de 2026\nseats: 1.250\nac: sí",
		"pt": "client: Pak Agus\nPreço: IDR" + nb + "15.000.000\nData: 1 de março de 2026\nseats: 1.250\nac: sim",
		"id": "client: Pak Agus\nHarga: Rp15.000.000\nTanggal: 1 Maret 2026\nseats: 1.250\nAC: ya",
	}
	for _, lang := range []string{"en", "fr", "ar", "es", "pt", "id"} {
		if got := dataLines(lang, "IDR", in, actionData(in, data)); got != want[lang] {
			t.Errorf("%s:\n got %q\nwant %q", lang, got, want[lang])
		}
	}
}
