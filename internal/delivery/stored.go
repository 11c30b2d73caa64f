package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
)

// Stored names a send that goes out from its record alone: an api send, a console reply, a
// parked send released (process_send).
type Stored struct {
	Key string
	// TenantID is the record's tenant; "" is the single-tenant default's record (a default
	// reply held or given up), sent with Token.
	TenantID string
	Token    string
	// ReleaseGen is the release generation of a released parked send, 0 for a first send.
	ReleaseGen  int64
	LastAttempt bool
}

// KindOf is the kind of a send made from its record, by who made the record.
func KindOf(rec store.OutboundRecord) Kind {
	switch rec.Source {
	case store.SourceAPI:
		return APISend
	case store.SourceConsole:
		return ConsoleReply
	case store.SourceNotification:
		return Notification
	case store.SourceTenantChoice:
		return TenantChoice
	default:
		return ParkedRelease
	}
}

// DeliverStored sends the message of the record s names, once. A key with no record, or a
// record of another tenant, is Invalid.
func (d *Deliverer) DeliverStored(ctx context.Context, s Stored) Result {
	if d.Sends == nil {
		return Result{Status: Retry, Err: errors.New("no send records configured"), Class: "temporary"}
	}
	rec, err := d.Sends.GetSend(ctx, s.Key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Result{Status: Invalid, Err: fmt.Errorf("no send record %s", s.Key), Class: "permanent"}
	case err != nil:
		return Result{Status: Retry, Err: err, Class: "temporary"}
	case rec.TenantID != s.TenantID:
		return Result{Status: Invalid, Err: fmt.Errorf("send record %s is not tenant %s's", s.Key, s.TenantID), Class: "permanent"}
	}
	req := Request{
		Kind: KindOf(rec), Key: s.Key, TenantID: rec.TenantID, Token: s.Token, PhoneNumberID: rec.PhoneNumberID, To: rec.To,
		Recipient: rec.Recipient, ConversationID: rec.ConversationID,
		CorrelationID: rec.CorrelationID, LastAttempt: s.LastAttempt, ReleaseGen: s.ReleaseGen,
		Compose: func(context.Context) (outgoing.Message, error) {
			m, err := storedMessage(rec.Message)
			return outgoing.Message{Graph: m}, err
		},
	}
	if rec.Fallback != "" {
		fallback, err := storedMessage(rec.Fallback)
		if err != nil {
			req.Compose = func(context.Context) (outgoing.Message, error) { return outgoing.Message{}, err }
		}
		req.Fallback = fallback
	}
	return d.Deliver(ctx, req)
}

// storedMessage decodes a record's Graph message; one that does not decode can never be sent.
func storedMessage(raw string) (*graph.Message, error) {
	var m graph.Message
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.Type == "" {
		return nil, NotSendable(ReasonMalformedMessage, fmt.Errorf("the record's message is not a Graph message: %v", err))
	}
	return &m, nil
}
