package worker

import (
	"context"

	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// EventApplier applies what Meta's events other than an ordinary message do to wapipe's
// records: a message's (revoke, edit, number change, ...) before it is answered, another
// field's (preferences, echoes, account updates, ...) when its delivery is fanned out;
// *events.Applier implements it.
type EventApplier interface {
	fanout.EventApplier
	ApplyMessage(ctx context.Context, tenantID, conversationID string, m whatsapp.Message) (events.Outcome, error)
}
