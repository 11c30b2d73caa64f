package store

import "context"

// OutboundForEvent returns the outbound records of the replies to one webhook delivery (by
// their inbound_event_id), at most limit of them: besides the reply keyed by a message's id they
// include a conversation turn's further replies and an action's result, which `wapipe inspect`
// shows. One equality filter, served by Firestore's automatic single-field index.
func (r *Outbound) OutboundForEvent(ctx context.Context, inboundEventID string, limit int) ([]OutboundRecord, error) {
	return queryAll[OutboundRecord](ctx, r.fs.Collection(OutboundMessages).Where("inbound_event_id", "==", inboundEventID).Limit(limit),
		"outbound records of an event")
}
