// Package keyedid makes the ids wapipe derives from people: contact aliases, conversations,
// sender windows, quota shares, marketing preferences, reply keys, and whatever later derives an
// id from a person or from a message that names one (a wamid encodes the sender's number).
//
// Every such id is an HMAC-SHA256 under a key derived from LOG_HASH_KEY (never a plain hash,
// which anyone could recompute from a guessed phone number), domain-separated by kind, cut to
// 128 bits. One Keyer serves the whole process; a store that names documents after people takes
// it, so no id of a person is made anywhere else.
package keyedid

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/wapipe/wapipe/internal/logging"
)

// Purpose names the key ids are derived with (logging.Hasher.DerivedKey): rotating LOG_HASH_KEY
// rotates it (`wapipe migrate --rekey` moves what was named under the previous key).
const Purpose = "wapipe/person-id/v1"

// Keyer derives keyed ids. The zero value is not usable: use New.
type Keyer struct {
	key []byte
	kid string
	// previous is the keyer of the key in use before a rotation (LOG_HASH_KEY_PREVIOUS), whose
	// ids reads still look up until `wapipe migrate --rekey` has run; nil when none.
	previous *Keyer
}

// New returns the Keyer of h's key (LOG_HASH_KEY); a nil h gives the development key's.
func New(h *logging.Hasher) *Keyer {
	key := h.DerivedKey(Purpose)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("key-id"))
	return &Keyer{key: key, kid: hex.EncodeToString(m.Sum(nil)[:4])}
}

// Dev returns the Keyer of the development LOG_HASH_KEY, for tests and the local stack.
func Dev() *Keyer { return New(logging.DevHasher()) }

// WithPrevious returns a copy of k that also knows the keyer of the key before a rotation.
func (k *Keyer) WithPrevious(prev *Keyer) *Keyer {
	c := *k
	if prev != nil && prev.kid != k.kid {
		c.previous = &Keyer{key: prev.key, kid: prev.kid}
	}
	return &c
}

// Previous is the keyer of the key before a rotation; nil when there is none.
func (k *Keyer) Previous() *Keyer { return k.previous }

// KeyID names the key in use, so a document can say which key named it (`wapipe migrate
// --rekey` moves the documents whose key_id is another). It reveals nothing of the key.
func (k *Keyer) KeyID() string { return k.kid }

// ID is the keyed id of parts under kind: 32 hex characters. Parts are NUL-separated, so no two
// lists of parts give the same input.
func (k *Keyer) ID(kind string, parts ...string) string {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(kind))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// replyPrefix starts the keys of the outbound records of replies: they travel to Meta as
// biz_opaque_callback_data, so a status finds its record (tasks.IsIdempotencyKey).
const replyPrefix = "reply-"

// ReplyKey is the idempotency key of reply index of the turn of inbound message messageID, and
// of the reply to it on the single-tenant default path (index 0). It is keyed: whoever else
// sees the wamid (another sender on a shared number) cannot compute it and echo it in a status.
func (k *Keyer) ReplyKey(messageID string, index int) string {
	return replyPrefix + k.ID("reply", messageID, strconv.Itoa(index))
}

// ActionReplyKey is the idempotency key of the one message that tells the user an action's
// result, of ReplyKey's form.
func (k *Keyer) ActionReplyKey(actionID string) string {
	return replyPrefix + k.ID("action-reply", actionID)
}

// ChoiceKey is the idempotency key of the list that asks the sender of message messageID which
// tenant of a shared number it is for (package choice), of ReplyKey's form: the message's own
// reply, once a tenant is chosen, keeps ReplyKey.
func (k *Keyer) ChoiceKey(messageID string) string {
	return replyPrefix + k.ID("tenant-choice", messageID)
}

// IsHexID reports whether s is an ID: 32 lowercase hex characters.
func IsHexID(s string) bool {
	if len(s) != 32 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
