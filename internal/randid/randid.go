// Package randid makes the random ids wapipe names things with: correlation ids, lease holders,
// message ids, nonces. One place, so each is as strong as the others.
package randid

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex returns n random bytes from crypto/rand as 2n hex digits. crypto/rand.Read never fails
// (it crashes the program rather than return an error), so neither does Hex.
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
