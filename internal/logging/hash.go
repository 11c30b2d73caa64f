package logging

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// DevHashKey is LOG_HASH_KEY's fixed default in dev. It is public, so refs made with it are no
// more private than the ids they stand for: staging and prod must set their own key.
const DevHashKey = "wapipe-dev-log-hash-key-not-a-secret"

// MinHashKeyBytes is the shortest LOG_HASH_KEY accepted: an HMAC-SHA256 key of 32 bytes or more
// keeps the refs as hard to enumerate as the hash is to invert.
const MinHashKeyBytes = 32

// Prefixes of the refs, so a reader (and wapipe inspect) can tell a ref from an id.
const (
	RefPrefix   = "ref_"
	PhonePrefix = "ph_"
	// UserPrefix starts the ref of a business-scoped user id (BSUID) or a parent BSUID,
	// UsernamePrefix the ref of a WhatsApp username: both identify a person, like a number.
	UserPrefix     = "us_"
	UsernamePrefix = "un_"
)

// Hasher makes the keyed hashes logs carry instead of ids and phone numbers (CONTRACT.md, Logs):
// an HMAC-SHA256 with LOG_HASH_KEY, cut to a readable prefix. Without the key, a ref cannot be
// computed from a guessed number, so the refs are pseudonymous; with it (wapipe hash-phone,
// wapipe hash-id), an operator finds one customer's or one message's lines. Every service uses
// the same key, so refs match across them.
type Hasher struct {
	key []byte
}

// NewHasher returns a Hasher keyed with key. It refuses a key shorter than MinHashKeyBytes.
func NewHasher(key string) (*Hasher, error) {
	if len(key) < MinHashKeyBytes {
		return nil, fmt.Errorf("log hash key: must be at least %d bytes, got %d", MinHashKeyBytes, len(key))
	}
	return &Hasher{key: []byte(key)}, nil
}

// HasherFromEnv returns the Hasher of LOG_HASH_KEY's value key in the APP_ENV appEnv: the key
// when set; when empty, DevHashKey in dev and an error elsewhere. Errors never include the key.
func HasherFromEnv(key, appEnv string) (*Hasher, error) {
	if key == "" {
		if appEnv != "dev" {
			return nil, fmt.Errorf("LOG_HASH_KEY: required when APP_ENV is %s", appEnv)
		}
		key = DevHashKey
	}
	h, err := NewHasher(key)
	if err != nil {
		return nil, errors.New("LOG_HASH_KEY: must be at least 32 bytes")
	}
	return h, nil
}

// devHasher backs the package's helpers when a caller gives no Hasher; never used to write logs
// (see Options.Hasher).
var devHasher = &Hasher{key: []byte(DevHashKey)}

// DevHasher returns the Hasher of DevHashKey, for dev tools and tests.
func DevHasher() *Hasher { return devHasher }

// Ref returns the ref of an id: a wamid, an inbound_event_id or a Graph message id. The same
// function gives event_ref and message_ref, so one lookup (wapipe hash-id) serves both.
// Empty in, empty out; a nil Hasher gives Redacted.
func (h *Hasher) Ref(id string) string {
	if id == "" {
		return ""
	}
	if h == nil {
		return Redacted
	}
	return RefPrefix + h.sum("id", id, 8)
}

// Phone returns the ph_ ref of a phone number or WhatsApp id. Everything but digits is dropped
// first, so "+1 555-123-4567" and Meta's "15551234567" give the same ref. Empty in, empty out;
// a nil Hasher gives Redacted.
func (h *Hasher) Phone(number string) string {
	digits := NormalizePhone(number)
	if digits == "" {
		return ""
	}
	if h == nil {
		return Redacted
	}
	return PhonePrefix + h.sum("phone", digits, 6)
}

// User returns the us_ ref of a business-scoped user id (BSUID) or parent BSUID, exactly as
// received (they are case-sensitive). Empty in, empty out; a nil Hasher gives Redacted.
func (h *Hasher) User(userID string) string {
	if userID == "" {
		return ""
	}
	if h == nil {
		return Redacted
	}
	return UserPrefix + h.sum("user", userID, 6)
}

// Address returns the ref of a send's recipient, as records' to_hash and logs carry it: the ph_
// ref of its phone to, else the us_ ref of its business-scoped user id recipient.
func (h *Hasher) Address(to, recipient string) string {
	if to != "" {
		return h.Phone(to)
	}
	return h.User(recipient)
}

// Username returns the un_ ref of a WhatsApp username; a leading "@" and letter case do not
// change it (usernames are shown with "@" and are not case-sensitive). Empty in, empty out; a
// nil Hasher gives Redacted.
func (h *Hasher) Username(name string) string {
	name = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(name), "@"))
	if name == "" {
		return ""
	}
	if h == nil {
		return Redacted
	}
	return UsernamePrefix + h.sum("username", name, 6)
}

// NormalizePhone keeps a phone number's digits, the form Meta's wa_id has.
func NormalizePhone(number string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, number)
}

// IsRef reports whether s has the form of a Ref.
func IsRef(s string) bool {
	hexPart, ok := strings.CutPrefix(s, RefPrefix)
	if !ok || len(hexPart) != 16 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// sum is the HMAC of a domain-separated value, cut to n bytes: the domain keeps a phone's ref
// from ever equalling an id's.
func (h *Hasher) sum(domain, v string, n int) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil)[:n])
}

// DerivedKey returns a key for purpose, derived from LOG_HASH_KEY: HMAC-SHA256(LOG_HASH_KEY,
// purpose). Ids a tenant can see or choose (package outbox) are keyed with it, so knowing the
// inputs tells nothing, with no second secret to provision; the purpose separates the derived
// key from the refs in logs and from any other use. A nil Hasher derives from DevHashKey.
func (h *Hasher) DerivedKey(purpose string) []byte {
	if h == nil {
		h = devHasher
	}
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
