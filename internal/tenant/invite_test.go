package tenant_test

import (
	"regexp"
	"testing"

	"github.com/wapipe/wapipe/internal/tenant"
)

func TestNewInviteCode(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^WP-[0-9A-HJKMNP-TV-Z]{8}$`)
	seen := map[string]bool{}
	for range 200 {
		c, err := tenant.NewInviteCode()
		if err != nil {
			t.Fatal(err)
		}
		if !shape.MatchString(c) {
			t.Fatalf("code %q, want WP- and 8 Crockford base32 characters", c)
		}
		if got, ok := tenant.NormalizeInviteCode(c); !ok || got != c {
			t.Fatalf("NormalizeInviteCode(%q) = %q, %v; want itself", c, got, ok)
		}
		if seen[c] {
			t.Fatalf("code %q twice in 200", c)
		}
		seen[c] = true
	}
}

func TestNormalizeInviteCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want string // "" when not a code
	}{
		{"WP-7K3M9QXZ", "WP-7K3M9QXZ"},
		{"  wp-7k3m9qxz \n", "WP-7K3M9QXZ"},
		{"WP 7K3M9QXZ", "WP-7K3M9QXZ"},
		{"WP7K3M9QXZ", "WP-7K3M9QXZ"},
		{"WP-7K3M9QXO", "WP-7K3M9QX0"}, // O read as 0
		{"WP-IK3M9QXL", "WP-1K3M9QX1"}, // I and L read as 1
		{"WP-7K3M9QX", ""},             // too short
		{"WP-7K3M9QXZZ", ""},           // too long
		{"WP-7K3M9QXU", ""},            // U is not in the alphabet
		{"my code is WP-7K3M9QXZ", ""}, // not exactly a code
		{"WP-7K3M 9QXZ", ""},
		{"hello", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := tenant.NormalizeInviteCode(tt.text)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("NormalizeInviteCode(%q) = %q, %v; want %q", tt.text, got, ok, tt.want)
		}
	}
}

func TestInviteCodeHash(t *testing.T) {
	t.Parallel()
	a := tenant.InviteCodeHash("WP-7K3M9QXZ")
	if b := tenant.InviteCodeHash(" wp 7k3m9qxz"); a != b {
		t.Errorf("hash of a retyped code %s, want the canonical code's %s", b, a)
	}
	if len(a) != 64 {
		t.Errorf("hash %q, want 64 hex digits", a)
	}
	if tenant.InviteCodeHash("WP-7K3M9QX0") == a {
		t.Error("two codes hash alike")
	}
}
