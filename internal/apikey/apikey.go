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
	"strings"
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
