package main

import (
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/logging"
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestHashPhoneAndHashID: hash-phone and hash-id print, on their last line, the refs the services
// log and store, keyed with LOG_HASH_KEY; without the key they use the dev default and say so;
// APP_ENV staging or prod without the key is refused, as in the services. (Not parallel: it sets
// the environment.)
func TestHashPhoneAndHashID(t *testing.T) {
	const (
		key   = "cli-test-log-hash-key-0123456789abcdef"
		phone = "447700900123"
		wamid = "wamid.HBgMNDQ3NzAwOTAwMTIzFQIAEhgUM0VCMEM3NjdENzE5NDYxOUVGNEEA"
	)
	h, err := logging.NewHasher(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("APP_ENV", "prod")
	t.Setenv("LOG_HASH_KEY", key)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hash-phone", phone}, h.Phone(phone)},
		{[]string{"hash-phone", "+44 7700 900123"}, h.Phone(phone)},
		{[]string{"hash-id", wamid}, h.Ref(wamid)},
		{[]string{"hash-id", wamid + ":delivered"}, h.Ref(wamid + ":delivered")},
	}
	for _, tc := range tests {
		out, errOut := mustCLIErr(t, tc.args...)
		if got := lastLine(out); got != tc.want {
			t.Errorf("wapipe %v = %q, want %q", tc.args, got, tc.want)
		}
		if strings.Contains(out+errOut, key) {
			t.Errorf("wapipe %v printed the key", tc.args)
		}
	}

	// Without a key (and no APP_ENV): the dev default, with a note.
	t.Setenv("APP_ENV", "")
	t.Setenv("LOG_HASH_KEY", "")
	out, errOut := mustCLIErr(t, "hash-phone", phone)
	if got := lastLine(out); got != logging.DevHasher().Phone(phone) || !strings.Contains(errOut, "dev default") {
		t.Errorf("without LOG_HASH_KEY: %q (stderr %q), want the dev default's ref and a note", got, errOut)
	}

	// Refused: prod without a key, a short key, no argument, not a number.
	t.Setenv("APP_ENV", "prod")
	for _, tc := range []struct {
		key  string
		args []string
	}{
		{"", []string{"hash-id", wamid}},
		{"short", []string{"hash-id", wamid}},
		{key, []string{"hash-id"}},
		{key, []string{"hash-phone", "not-a-number"}},
	} {
		t.Setenv("LOG_HASH_KEY", tc.key)
		if _, _, err := cli(t, tc.args...); err == nil || exitCode(err) != 2 {
			t.Errorf("wapipe %v with LOG_HASH_KEY %q: %v, want a usage error (exit 2)", tc.args, tc.key, err)
		}
	}
}

func mustCLIErr(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errOut, err := cli(t, args...)
	if err != nil {
		t.Fatalf("wapipe %s: %v\nstderr:\n%s", strings.Join(args, " "), err, errOut)
	}
	return out, errOut
}
