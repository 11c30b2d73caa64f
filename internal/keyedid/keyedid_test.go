package keyedid

import (
	"testing"

	"github.com/wapipe/wapipe/internal/logging"
)

func TestIDIsKeyedAndSeparated(t *testing.T) {
	t.Parallel()
	a := Dev()
	h, err := logging.NewHasher("another-key-of-at-least-thirty-two-bytes!")
	if err != nil {
		t.Fatal(err)
	}
	b := New(h)
	tests := []struct {
		name string
		x, y string
		same bool
	}{
		{"same key, kind and parts", a.ID("contact", "t", "6281"), a.ID("contact", "t", "6281"), true},
		{"another key", a.ID("contact", "t", "6281"), b.ID("contact", "t", "6281"), false},
		{"another kind", a.ID("contact", "t", "6281"), a.ID("conversation", "t", "6281"), false},
		{"parts are separated", a.ID("k", "ab", "c"), a.ID("k", "a", "bc"), false},
		{"reply index", a.ReplyKey("wamid.X", 0), a.ReplyKey("wamid.X", 1), false},
		{"reply and action reply", a.ReplyKey("x", 0), a.ActionReplyKey("x"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.x == tc.y) != tc.same {
				t.Errorf("x=%s y=%s: same=%v, want %v", tc.x, tc.y, tc.x == tc.y, tc.same)
			}
		})
	}
	if !IsHexID(a.ID("k")) || IsHexID("XYZ") {
		t.Error("IsHexID does not recognise an ID")
	}
	if a.KeyID() == b.KeyID() || a.KeyID() != Dev().KeyID() {
		t.Errorf("key ids: %s %s", a.KeyID(), b.KeyID())
	}
	if got := a.WithPrevious(b).Previous(); got == nil || got.KeyID() != b.KeyID() {
		t.Error("WithPrevious lost the previous key")
	}
	if a.WithPrevious(Dev()).Previous() != nil {
		t.Error("the same key is not a previous key")
	}
}
