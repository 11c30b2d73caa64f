package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// DeadLetterStore keeps the tasks that failed on their last attempt (dead_letters).
type DeadLetterStore struct {
	fs   *firestore.Client
	opts Options
}

// NewDeadLetters returns the dead letter store.
func NewDeadLetters(db *DB, opts Options) *DeadLetterStore {
	return &DeadLetterStore{fs: db.fs, opts: opts.withDefaults()}
}

// DeadLetter is a task that failed on its last attempt (dead_letters), kept with its body so it
// can be replayed. Cloud Tasks has no dead-letter queue of its own.
type DeadLetter struct {
	ID            string `firestore:"id" json:"id"`
	Queue         string `firestore:"queue" json:"queue"`
	TaskName      string `firestore:"task_name" json:"task_name"`
	Path          string `firestore:"path" json:"path"`
	Body          string `firestore:"body" json:"body"`
	LastError     string `firestore:"last_error" json:"last_error"`
	LastErrorCode int64  `firestore:"last_error_code,omitempty" json:"last_error_code,omitempty"`
	// Reason classifies the failure (permanent, temporary, throttled, panic, outcome_unknown…).
	Reason         string    `firestore:"reason,omitempty" json:"reason,omitempty"`
	RetryCount     int64     `firestore:"retry_count" json:"retry_count"`
	CorrelationID  string    `firestore:"correlation_id,omitempty" json:"correlation_id,omitempty"`
	InboundEventID string    `firestore:"inbound_event_id,omitempty" json:"inbound_event_id,omitempty"`
	IdempotencyKey string    `firestore:"idempotency_key,omitempty" json:"idempotency_key,omitempty"`
	Replayed       bool      `firestore:"replayed" json:"replayed"`
	ReplayedAt     time.Time `firestore:"replayed_at,omitempty" json:"replayed_at,omitempty"`
	CreatedAt      time.Time `firestore:"created_at" json:"created_at"`
	ExpireAt       time.Time `firestore:"expire_at" json:"expire_at"`
}

// PutDeadLetter writes a dead letter; its id is derived from the task name, so the same task
// dead-lettered twice is one document.
func (r *DeadLetterStore) PutDeadLetter(ctx context.Context, d DeadLetter) (string, error) {
	now := r.opts.Now()
	if d.ID == "" {
		d.ID = DocID(d.Queue + "/" + d.TaskName + "/" + d.IdempotencyKey + d.InboundEventID)
	}
	d.CreatedAt, d.ExpireAt = now, now.Add(r.opts.Retention)
	if _, err := r.fs.Collection(DeadLetters).Doc(d.ID).Set(ctx, d); err != nil {
		return "", fmt.Errorf("write dead letter: %w", err)
	}
	return d.ID, nil
}

// ListDeadLetters returns dead letters in no particular order, optionally only those not yet
// replayed.
func (r *DeadLetterStore) ListDeadLetters(ctx context.Context, onlyPending bool, limit int) ([]DeadLetter, error) {
	q := r.fs.Collection(DeadLetters).Query
	if onlyPending {
		q = q.Where("replayed", "==", false)
	}
	if limit > 0 {
		q = q.Limit(limit)
	}
	return queryAll[DeadLetter](ctx, q, "dead letters")
}

// MarkReplayed flags a dead letter as replayed.
func (r *DeadLetterStore) MarkReplayed(ctx context.Context, id string) error {
	_, err := r.fs.Collection(DeadLetters).Doc(id).Update(ctx, []firestore.Update{
		{Path: "replayed", Value: true},
		{Path: "replayed_at", Value: r.opts.Now()},
	})
	if err != nil {
		return fmt.Errorf("mark dead letter %s replayed: %w", id, err)
	}
	return nil
}

// ListDeadLettersFor lists the dead letters of one inbound event or one reply (by idempotency key).
func (r *DeadLetterStore) ListDeadLettersFor(ctx context.Context, inboundEventID, idempotencyKey string) ([]DeadLetter, error) {
	var out []DeadLetter
	seen := map[string]bool{}
	for _, q := range []struct{ field, value string }{{"inbound_event_id", inboundEventID}, {"idempotency_key", idempotencyKey}} {
		if q.value == "" {
			continue
		}
		docs, err := r.fs.Collection(DeadLetters).Where(q.field, "==", q.value).Documents(ctx).GetAll()
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		for _, d := range docs {
			if seen[d.Ref.ID] {
				continue
			}
			seen[d.Ref.ID] = true
			var dl DeadLetter
			if err := d.DataTo(&dl); err != nil {
				return nil, fmt.Errorf("decode dead letter: %w", err)
			}
			out = append(out, dl)
		}
	}
	return out, nil
}

// GetDeadLetter reads one dead letter by id.
func (r *DeadLetterStore) GetDeadLetter(ctx context.Context, id string) (DeadLetter, error) {
	return getDoc[DeadLetter](ctx, r.fs.Collection(DeadLetters).Doc(id), "dead letter")
}

// CountPending counts the dead letters not yet replayed.
func (r *DeadLetterStore) CountPending(ctx context.Context) (int64, error) {
	n, err := count(ctx, r.fs.Collection(DeadLetters).Where("replayed", "==", false))
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// DeadLetterQuery selects a page of dead letters.
type DeadLetterQuery struct {
	// OnlyPending leaves out the dead letters replayed already.
	OnlyPending bool
	// Limit is the page size; 50 when zero.
	Limit int
	// After is the page token a previous page returned; "" for the first page.
	After string
}

// DeadLetterPage is a page of dead letters, newest first.
type DeadLetterPage struct {
	DeadLetters []DeadLetter
	Next        string
}

// ListDeadLetterPage returns a page of dead letters by created_at, newest first.
func (r *DeadLetterStore) ListDeadLetterPage(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error) {
	fq := r.fs.Collection(DeadLetters).Query
	if q.OnlyPending {
		fq = fq.Where("replayed", "==", false)
	}
	ds, next, err := page(ctx, fq, "created_at", q.After, q.Limit, "dead letters",
		func(d DeadLetter) string { return d.ID }, func(d DeadLetter) time.Time { return d.CreatedAt })
	if err != nil {
		return DeadLetterPage{}, err
	}
	return DeadLetterPage{DeadLetters: ds, Next: next}, nil
}
