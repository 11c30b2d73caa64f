// Package logcheck is the test helper that checks captured log output for what CONTRACT.md (Logs)
// keeps out of log lines: wamids, phone numbers, business-scoped user ids (BSUIDs) and usernames
// in clear, and unkeyed hashes of any of them (the form wapipe's logs once carried, which anyone
// can compute from a guessed number).
package logcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

// bsuidPattern finds what has the shape of a BSUID or a parent BSUID (CC.… or CC.ENT.…, with
// digits in it) anywhere in a line, whether or not the test named it: a person's id, like a
// wamid, never belongs in a log line.
var bsuidPattern = regexp.MustCompile(`\b[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]*[0-9][A-Za-z0-9]*`)

// Check fails t once for each line of logs that holds "wamid.", something shaped like a BSUID,
// one of phones (as given, or its digits alone), one of ids (wamids, BSUIDs, usernames: with
// and without a leading "@"), or an unkeyed hash of one of phones or ids. It returns the number
// of lines checked, so a caller can assert the logs were not empty.
func Check(t testing.TB, logs string, phones, ids []string) int {
	t.Helper()
	type needle struct{ what, s string }
	var needles []needle
	for _, p := range phones {
		if p == "" {
			continue
		}
		forms := []string{p}
		if d := digits(p); d != p && len(d) >= 7 {
			forms = append(forms, d)
		}
		for _, f := range forms {
			needles = append(needles, needle{"phone number", f})
			for _, h := range UnkeyedHashes(f) {
				needles = append(needles, needle{"unkeyed hash of a phone number", h})
			}
		}
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if u, ok := strings.CutPrefix(id, "@"); ok && u != "" {
			needles = append(needles, needle{"username in clear", u})
		}
		needles = append(needles, needle{"id in clear", id})
		for _, h := range UnkeyedHashes(id) {
			needles = append(needles, needle{"unkeyed hash of an id", h})
		}
	}
	n := 0
	for line := range strings.Lines(logs) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n++
		if strings.Contains(line, "wamid.") {
			t.Errorf("log line holds a wamid: %s", line)
		}
		if m := bsuidPattern.FindString(line); len(m) >= 7 {
			t.Errorf("log line holds a business-scoped user id (%q): %s", m, line)
		}
		for _, nd := range needles {
			if strings.Contains(line, nd.s) {
				t.Errorf("log line holds a %s (%q): %s", nd.what, nd.s, line)
			}
		}
	}
	return n
}

// UnkeyedHashes are the unkeyed forms of v a log line must not carry: the ph_ form wapipe used
// before the keyed hashes (SHA-256 of "wapipe-phone\x00"+v cut to 48 bits), and plain SHA-256 in
// hex, whole and cut to 12 and 16 characters.
func UnkeyedHashes(v string) []string {
	old := sha256.Sum256([]byte("wapipe-phone\x00" + v))
	plain := sha256.Sum256([]byte(v))
	p := hex.EncodeToString(plain[:])
	return []string{"ph_" + hex.EncodeToString(old[:6]), p, p[:12], p[:16]}
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
