package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Statuses keeps the delivery statuses as received (message_statuses).
type Statuses struct {
	fs   *firestore.Client
	opts Options
}

// NewStatuses returns the status store.
func NewStatuses(db *DB, opts Options) *Statuses {
	return &Statuses{fs: db.fs, opts: opts.withDefaults()}
}

// StatusRecord is one delivery status as received (message_statuses), keyed by "<id>:<status>".
type StatusRecord struct {
	Key            string `firestore:"key" json:"key"`
	GraphMessageID string `firestore:"graph_message_id" json:"graph_message_id"`
	Status         string `firestore:"status" json:"status"`
	Timestamp      string `firestore:"timestamp,omitempty" json:"timestamp,omitempty"`
	PhoneNumberID  string `firestore:"phone_number_id,omitempty" json:"phone_number_id,omitempty"`
	// TenantID owns PhoneNumberID; empty for the single-tenant default (or no one).
	TenantID       string    `firestore:"tenant_id,omitempty" json:"tenant_id,omitempty"`
	RecipientHash  string    `firestore:"recipient_hash,omitempty" json:"recipient_hash,omitempty"`
	IdempotencyKey string    `firestore:"idempotency_key,omitempty" json:"idempotency_key,omitempty"`
	ErrorCode      int64     `firestore:"error_code,omitempty" json:"error_code,omitempty"`
	ErrorTitle     string    `firestore:"error_title,omitempty" json:"error_title,omitempty"`
	InboundEventID string    `firestore:"inbound_event_id,omitempty" json:"inbound_event_id,omitempty"`
	CorrelationID  string    `firestore:"correlation_id,omitempty" json:"correlation_id,omitempty"`
	ReceivedAt     time.Time `firestore:"received_at" json:"received_at"`
	ExpireAt       time.Time `firestore:"expire_at" json:"expire_at"`
}

// RecordStatus stores a status once. It returns false when the same "<id>:<status>" was recorded
// before, so the caller skips it.
func (r *Statuses) RecordStatus(ctx context.Context, s StatusRecord) (bool, error) {
	now := r.opts.Now()
	s.ReceivedAt, s.ExpireAt = now, now.Add(r.opts.Retention)
	_, err := r.fs.Collection(MessageStatuses).Doc(DocID(s.Key)).Create(ctx, s)
	if status.Code(err) == codes.AlreadyExists {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record status %s: %w", s.Status, err)
	}
	return true, nil
}

// StatusSeen reports whether a status ("<id>:<status>") was recorded already.
func (r *Statuses) StatusSeen(ctx context.Context, key string) (bool, error) {
	_, err := r.fs.Collection(MessageStatuses).Doc(DocID(key)).Get(ctx)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound:
		return false, nil
	default:
		return false, fmt.Errorf("read status: %w", err)
	}
}

// ListStatusesFor lists the statuses recorded for a Graph message id.
func (r *Statuses) ListStatusesFor(ctx context.Context, graphMessageID string) ([]StatusRecord, error) {
	out, err := queryAll[StatusRecord](ctx, r.fs.Collection(MessageStatuses).Where("graph_message_id", "==", graphMessageID), "statuses")
	if out == nil && err == nil {
		out = []StatusRecord{}
	}
	return out, err
}
