package actioncall

import (
	"context"
	"errors"
	"testing"
)

// TestControlChecksTheSocketAddress: the last check, on the address the socket is about to
// connect to, refuses whatever reached it (a resolver bypassed, an address family mix-up).
func TestControlChecksTheSocketAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		address string
		public  bool
	}{
		{"8.8.8.8:443", true},
		{"[2606:4700:4700::1111]:443", true},
		{"127.0.0.1:443", false},
		{"[::1]:443", false},
		{"[::ffff:169.254.169.254]:80", false},
		{"10.1.2.3:443", false},
		{"not-an-address", false},
	}
	for _, tc := range cases {
		err := controlPublic("tcp", tc.address, nil)
		if (err == nil) != tc.public || (err != nil && !errors.Is(err, ErrNotPublic)) {
			t.Errorf("controlPublic(%s) = %v, want public %v", tc.address, err, tc.public)
		}
	}
}

// TestPublicDialerRefusesBeforeDialing: the dialer refuses a literal or resolved address that
// is not public without dialing it.
func TestPublicDialerRefusesBeforeDialing(t *testing.T) {
	t.Parallel()
	d := newPublicDialer(nil)
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "169.254.169.254:80", "localhost:1", "metadata.google.internal:80"} {
		if c, err := d.DialContext(context.Background(), "tcp", addr); !errors.Is(err, ErrNotPublic) {
			if c != nil {
				c.Close()
			}
			t.Errorf("DialContext(%s) = %v, want ErrNotPublic", addr, err)
		}
	}
}
