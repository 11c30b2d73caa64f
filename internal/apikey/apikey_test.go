package apikey_test

import (
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/apikey"
)

func TestParseTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90d", 90 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"36h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1d", 24 * time.Hour, true},
		{"", 0, false},
		{"0d", 0, false},
		{"-5h", 0, false},
		{"d", 0, false},
		{"xd", 0, false},
		{"90days", 0, false},
		{"1.5d", 0, false},
		{"90", 0, false},
	}
	for _, tc := range tests {
		got, err := apikey.ParseTTL(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPrefixNamesTheKey(t *testing.T) {
	t.Parallel()
	key, id, _, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	p := apikey.DisplayPrefix(id)
	for _, s := range []string{p, id} {
		if got, ok := apikey.IDFromPrefix(s); !ok || got != id {
			t.Errorf("IDFromPrefix(%q) = %q, %v; want %q", s, got, ok, id)
		}
	}
	for _, s := range []string{key, "wpk_", "wpk_" + id[:8], "WPK_" + id, "wpk_" + id + "x", "wpk_zzzzzzzzzzzzzzzz"} {
		if got, ok := apikey.IDFromPrefix(s); ok {
			t.Errorf("IDFromPrefix(%q) = %q: want refused", s, got)
		}
	}
	if len(p) >= len(key) || key[:len(p)] != p {
		t.Errorf("prefix %q is not the start of its key", p)
	}
}
