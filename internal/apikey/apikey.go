// Package apikey makes and checks the api service's keys. A key is "wpk_", a 16-hex-digit id,
// "_" and 256 random bits (base64url): the id finds the stored record (store.APIKeys) and the
// SHA-256 of the whole key, compared in constant time, proves it. The key itself is never stored.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Prefix starts every key, so a leaked key is recognisable (secret scanners).
const Prefix = "wpk_"

const idLen = 16

// New returns a fresh key, its id and its hash.
func New() (key, id, hash string, err error) {
	var idb [idLen / 2]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", "", "", fmt.Errorf("api key: crypto/rand: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", "", "", fmt.Errorf("api key: crypto/rand: %w", err)
	}
	id = hex.EncodeToString(idb[:])
	key = Prefix + id + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	return key, id, Hash(key), nil
}

// ID returns the id of key, and false when key does not have the form New gives.
func ID(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok || len(rest) != idLen+1+43 || rest[idLen] != '_' {
		return "", false
	}
	id := rest[:idLen]
	if _, err := hex.DecodeString(id); err != nil || strings.ToLower(id) != id {
		return "", false
	}
	return id, true
}

// Hash is the stored form of key: SHA-256, hex. The key has 256 random bits, so a fast hash is
// enough (nothing to brute-force).
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Match reports, in constant time, whether key hashes to hash.
func Match(key, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(Hash(key)), []byte(hash)) == 1
}

// DisplayPrefix is how operators name a key (wapipe tenants api-keys, revoke-key, the console):
// Prefix and the key's id. It identifies the key and proves nothing.
func DisplayPrefix(id string) string { return Prefix + id }

// IDFromPrefix returns the key id a DisplayPrefix (or the bare id) names, and false when s is
// neither. A whole key is refused too: it must not be typed where prefixes go.
func IDFromPrefix(s string) (string, bool) {
	id := strings.TrimPrefix(s, Prefix)
	if len(id) != idLen || strings.ToLower(id) != id {
		return "", false
	}
	if _, err := hex.DecodeString(id); err != nil {
		return "", false
	}
	return id, true
}

// ParseTTL parses a key's lifetime: a Go duration ("720h", "90m") or a whole number of days
// with a d suffix, optionally followed by a Go duration ("90d", "1d12h"). It must be positive.
func ParseTTL(s string) (time.Duration, error) {
	orig := s
	var days time.Duration
	hasDays := false
	if i := strings.IndexByte(s, 'd'); i > 0 {
		hasDays = true
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90d, 36h or 1d12h", orig)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	var rest time.Duration
	if s != "" || !hasDays {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90d, 36h or 1d12h", orig)
		}
		rest = d
	}
	if days+rest <= 0 {
		return 0, fmt.Errorf("%q: must be positive", orig)
	}
	return days + rest, nil
}
