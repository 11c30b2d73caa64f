package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// The outbound records' reads of the operators' console (internal/console): a batch read, and the
// last hour's sends. They belong in outbound.go; they wait here until the send-state rework
// there is merged.

// GetOutbounds reads the records of keys in one batch; keys without a record are absent from the
// map. One read per key.
func (r *Outbound) GetOutbounds(ctx context.Context, keys []string) (map[string]OutboundRecord, error) {
	out := map[string]OutboundRecord{}
	if len(keys) == 0 {
		return out, nil
	}
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		refs[i] = r.outboundDoc(k)
	}
	snaps, err := r.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read outbound records: %w", err)
	}
	for i, s := range snaps {
		if !s.Exists() {
			continue
		}
		var rec OutboundRecord
		if err := s.DataTo(&rec); err != nil {
			return nil, fmt.Errorf("decode outbound record: %w", err)
		}
		out[keys[i]] = rec
	}
	return out, nil
}

// SentPoint is one reply sent: when, and its webhook-to-sent latency (-1 when unknown).
type SentPoint struct {
	SentAt    time.Time
	LatencyMS int64
}

// SentSince returns the replies sent at or after since, oldest first, at most limit of them:
// only their send time and latency are read (a projection), for the console's chart.
func (r *Outbound) SentSince(ctx context.Context, since time.Time, limit int) ([]SentPoint, error) {
	q := r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSent).Where("sent_at", ">=", since).
		OrderBy("sent_at", firestore.Asc).Select("sent_at", "latency_ms", "latency_bucket").Limit(limit)
	type point struct {
		SentAt        time.Time `firestore:"sent_at"`
		LatencyMS     int64     `firestore:"latency_ms"`
		LatencyBucket int64     `firestore:"latency_bucket"`
	}
	ps, err := queryAll[point](ctx, q, "sent records")
	if err != nil {
		return nil, err
	}
	out := make([]SentPoint, len(ps))
	for i, p := range ps {
		out[i] = SentPoint{SentAt: p.SentAt, LatencyMS: p.LatencyMS}
		if p.LatencyBucket < 0 {
			out[i].LatencyMS = -1
		}
	}
	return out, nil
}
