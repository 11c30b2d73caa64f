package tenant

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Invite codes are "WP-" and 8 characters of Crockford's base32 (no I, L, O or U), 40 bits from
// crypto/rand: short enough to type on a phone, and a code read aloud or retyped with O for 0 or
// I/L for 1 still works. They are one-time and expire (InviteTTL), so 40 bits is plenty against
// guessing.
const (
	invitePrefix  = "WP-"
	inviteLen     = 8
	crockford     = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	InviteTTL     = 7 * 24 * time.Hour // how long an invite is valid (the contract: 7 days)
	inviteCodeLen = len(invitePrefix) + inviteLen
)

// NewInviteCode returns a fresh invite code, "WP-" and 8 Crockford base32 characters.
func NewInviteCode() (string, error) {
	var b [inviteLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("invite code: %w", err)
	}
	var sb strings.Builder
	sb.WriteString(invitePrefix)
	for _, c := range b {
		sb.WriteByte(crockford[c&31]) // 256 is a multiple of 32: no bias
	}
	return sb.String(), nil
}

// NormalizeInviteCode reports whether text is exactly an invite code once spaces around it are
// trimmed and letters upper-cased, and returns the code in its canonical form. It is lenient
// where people typing on a phone slip: a space or nothing for the dash ("wp 1234abcd"), O for 0,
// I or L for 1. Anything else around the code (a sentence that contains one) is not a code.
func NormalizeInviteCode(text string) (code string, ok bool) {
	s := strings.ToUpper(strings.TrimSpace(text))
	rest, found := strings.CutPrefix(s, "WP")
	if !found {
		return "", false
	}
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "-"), " ")
	if len(rest) != inviteLen {
		return "", false
	}
	var sb strings.Builder
	sb.WriteString(invitePrefix)
	for i := range len(rest) {
		c := rest[i]
		switch c {
		case 'O':
			c = '0'
		case 'I', 'L':
			c = '1'
		}
		if !strings.ContainsRune(crockford, rune(c)) {
			return "", false
		}
		sb.WriteByte(c)
	}
	return sb.String(), true
}

// InviteCodeHash is the sha256 (hex) of the code's canonical form: what the store keeps instead
// of the code. Text that is not a code hashes as it is, trimmed and upper-cased.
func InviteCodeHash(code string) string {
	c, ok := NormalizeInviteCode(code)
	if !ok {
		c = strings.ToUpper(strings.TrimSpace(code))
	}
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:])
}
