package whatsapp_test

import (
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestVerifySignature(t *testing.T) {
	t.Parallel()
	body := []byte(`{"object":"whatsapp_business_account"}`)
	good := whatsapp.Sign(body, "s3cret")
	tests := []struct {
		name   string
		header string
		body   []byte
		want   bool
	}{
		{"Meta's signature", good, body, true},
		{"other secret", whatsapp.Sign(body, "other"), body, false},
		{"other bytes", good, append([]byte(" "), body...), false},
		{"no prefix", strings.TrimPrefix(good, "sha256="), body, false},
		{"not hex", "sha256=zz", body, false},
		{"too short", "sha256=00", body, false},
		{"empty", "", body, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := whatsapp.VerifySignature(tc.header, tc.body, "s3cret"); got != tc.want {
				t.Errorf("VerifySignature(%q) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}
