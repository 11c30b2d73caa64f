package assistant

import (
	"context"

	"github.com/wapipe/wapipe/internal/turnstate"
)

// Guard holds the counters that turns of different conversations share: the sender rate limit
// and the monthly LLM quota. The worker implements it on Firestore (one transaction each); both
// methods must be exact under concurrency (the quota within a documented margin, see
// ReserveCall) and idempotent per message or call id, so a redone turn gets the answer the
// first attempt got and is not counted twice.
type Guard interface {
	// HitSender counts message h.MessageID of h.Sender against the tenant's sender limit and
	// says whether it is over. An implementation keeps one turnstate.Window per (tenant,
	// sender) and applies turnstate.Window.Hit in a transaction.
	HitSender(ctx context.Context, h turnstate.SenderHit) (turnstate.RateDecision, error)
	// ReserveCall counts one LLM call against the tenant's usage of c.Period, and against the
	// contact's share of it, before it is made: when the tenant's quota is limited and its
	// usage has reached it, or the contact's share is limited and the contact's usage has
	// reached it, it grants nothing and counts nothing; otherwise it adds one to both and
	// grants. A call id already granted is granted again without counting, so a redone turn
	// does not pay twice. Usage is counted even when the quota is unlimited (for `wapipe
	// tenants show`).
	//
	// Reserving before the call, rather than recording after it, is what keeps the quota
	// exact: 100 concurrent turns with 50 calls left must make exactly 50 calls. The contact's
	// share is exact; the tenant's quota may be exact only for its last calls (store.Guard
	// spreads the others over shards, and documents its margin), so that a busy tenant's
	// calls do not all write one document.
	ReserveCall(ctx context.Context, c turnstate.CallReservation) (turnstate.CallDecision, error)
	// RecordTokens adds the tokens of a call ReserveCall granted to the tenant's usage of
	// u.Period, beside its call count (`wapipe tenants show`, the console), once per call id.
	RecordTokens(ctx context.Context, u turnstate.TokenUse) error
}
