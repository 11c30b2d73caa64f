package randid_test

import (
	"encoding/hex"
	"testing"

	"github.com/wapipe/wapipe/internal/randid"
)

// TestHex: n bytes give 2n hex digits, and two ids differ.
func TestHex(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 8, 16, 32} {
		a, b := randid.Hex(n), randid.Hex(n)
		if raw, err := hex.DecodeString(a); err != nil || len(raw) != n {
			t.Errorf("Hex(%d) = %q: not %d bytes of hex (%v)", n, a, n, err)
		}
		if n >= 8 && a == b {
			t.Errorf("Hex(%d) gave %q twice", n, a)
		}
	}
}
