package tenants

import (
	"context"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/signup"
)

// SignupLinks makes Embedded Signup links, as `wapipe tenants connect-link` does.
type SignupLinks struct {
	Sealer signup.Sealer
	// Keyer tags the links' states (LOG_HASH_KEY's key); the dev key's when nil.
	Keyer         *keyedid.Keyer
	PublicBaseURL string
	Now           func() time.Time
}

// ConnectLink returns a link, valid 1 h and usable once, for the tenant's admin to reconnect.
func (l SignupLinks) ConnectLink(ctx context.Context, tenantID string) (string, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	link, _, err := signup.NewConnectLink(ctx, l.Sealer, l.Keyer, l.PublicBaseURL, tenantID, now())
	return link, err
}
