package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
)

// Actions is the collection of the action calls a tenant's assistant made (actions/{action_id}).
const Actions = "actions"

// The states of an action.
const (
	// ActionCalling: an attempt holds the call until LeaseUntil.
	ActionCalling = "calling"
	// ActionWaiting: the last attempt failed in a way a retry may fix (5xx, timeout): the next
	// attempt calls again, with the same Idempotency-Key.
	ActionWaiting = "waiting"
	// ActionDone: the business answered 2xx. Never called again.
	ActionDone = "done"
	// ActionRefused: the business answered 4xx. Never called again.
	ActionRefused = "refused"
	// ActionFailed: the attempts ran out, or the call cannot succeed (bad URL, no secret).
	ActionFailed = "failed"
)

// ErrActionBusy is returned by BeginCall when another attempt holds the call: Cloud Tasks ran the
// action's task twice at once. The caller retries later rather than call a second time.
var ErrActionBusy = errors.New("action call in progress in another attempt")

// ActionRecord is one action (actions/{ActionID}): its state and the business's answer. Reply is
// the text the user got, so it expires with the conversation's retention.
type ActionRecord struct {
	ActionID       string `firestore:"action_id" json:"action_id"`
	TenantID       string `firestore:"tenant_id" json:"tenant_id"`
	ConversationID string `firestore:"conversation_id" json:"conversation_id"`
	Intent         string `firestore:"intent" json:"intent"`
	State          string `firestore:"state" json:"state"`
	// Attempts counts the calls begun.
	Attempts   int64     `firestore:"attempts" json:"attempts"`
	LeaseUntil time.Time `firestore:"lease_until" json:"lease_until"`
	HTTPStatus int64     `firestore:"http_status" json:"http_status"`
	// Reply is the business's reply ({"reply":…}) to a final answer, as the user saw it.
	Reply     string `firestore:"reply" json:"reply"`
	LastError string `firestore:"last_error" json:"last_error"`
	// ReplyKey is the idempotency key of the message that told the user the result.
	ReplyKey   string    `firestore:"reply_key" json:"reply_key"`
	CreatedAt  time.Time `firestore:"created_at" json:"created_at"`
	UpdatedAt  time.Time `firestore:"updated_at" json:"updated_at"`
	FinishedAt time.Time `firestore:"finished_at" json:"finished_at"`
	ExpireAt   time.Time `firestore:"expire_at" json:"expire_at"`
}

// Final reports whether the action has its answer: it is never called again.
func (r ActionRecord) Final() bool {
	return r.State == ActionDone || r.State == ActionRefused || r.State == ActionFailed
}

// ActionStore keeps the actions. It is what makes an action run at most once per action id from
// wapipe's side: a call begins only while no answer is recorded and no other attempt holds it.
type ActionStore struct {
	fs   *firestore.Client
	opts Options
}

// NewActionStore returns the action store; opts.Retention is CONVERSATION_RETENTION
// (DefaultConversationRetention when zero), as the records hold the text the user got.
func NewActionStore(db *DB, opts Options) *ActionStore {
	if opts.Retention <= 0 {
		opts.Retention = DefaultConversationRetention
	}
	return &ActionStore{fs: db.fs, opts: opts.withDefaults()}
}

func (a *ActionStore) doc(id string) *firestore.DocumentRef { return a.fs.Collection(Actions).Doc(id) }

// BeginCall decides whether this attempt may call the business for seed.ActionID, in one
// transaction: with an answer recorded it returns the record and false (send the recorded
// answer, call nothing); with another attempt's hold still running, ErrActionBusy; otherwise it
// holds the call until now + hold, counts the attempt and returns true. One read, one write.
func (a *ActionStore) BeginCall(ctx context.Context, seed ActionRecord, hold time.Duration) (ActionRecord, bool, error) {
	ref := a.doc(seed.ActionID)
	rec, err := runTx(ctx, a.fs, a.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (beginResult, error) {
		now := a.opts.Now()
		rec, ok, err := getTx[ActionRecord](tx, ref)
		switch {
		case err != nil:
			return beginResult{}, err
		case !ok:
			rec = seed
			rec.CreatedAt = now
		default:
			if rec.Final() {
				return beginResult{rec: rec}, nil
			}
			if rec.State == ActionCalling && now.Before(rec.LeaseUntil) {
				return beginResult{rec: rec, busy: true}, nil
			}
		}
		rec.State, rec.LeaseUntil, rec.UpdatedAt = ActionCalling, now.Add(hold), now
		rec.Attempts++
		rec.ExpireAt = now.Add(a.opts.Retention)
		return beginResult{rec: rec, call: true}, tx.Set(ref, rec)
	})
	if err != nil {
		return ActionRecord{}, false, fmt.Errorf("begin action call %s: %w", seed.ActionID, err)
	}
	if rec.busy {
		return rec.rec, false, ErrActionBusy
	}
	return rec.rec, rec.call, nil
}

type beginResult struct {
	rec        ActionRecord
	call, busy bool
}

// Finish records the answer of a call: state (ActionDone, ActionRefused, ActionFailed) with the
// business's status and reply, and the key of the message that tells the user. An answer already
// recorded stays (the first one wins). One read, one write.
func (a *ActionStore) Finish(ctx context.Context, id, state string, httpStatus int, reply, lastError, replyKey string) (ActionRecord, error) {
	rec, err := updateTx(ctx, a.fs, a.opts.txHooks, a.doc(id), func(rec *ActionRecord) (bool, error) {
		if rec.Final() {
			return false, nil
		}
		now := a.opts.Now()
		rec.State, rec.HTTPStatus, rec.Reply, rec.LastError, rec.ReplyKey = state, int64(httpStatus), reply, lastError, replyKey
		rec.LeaseUntil, rec.UpdatedAt, rec.FinishedAt = time.Time{}, now, now
		return true, nil
	})
	if err != nil {
		return ActionRecord{}, fmt.Errorf("finish action %s: %w", id, err)
	}
	return rec, nil
}

// Wait records a failed attempt a retry may fix and lets the next attempt call at once. One
// write.
func (a *ActionStore) Wait(ctx context.Context, id string, httpStatus int, lastError string) error {
	now := a.opts.Now()
	_, err := a.doc(id).Update(ctx, []firestore.Update{
		{Path: "state", Value: ActionWaiting},
		{Path: "lease_until", Value: time.Time{}},
		{Path: "http_status", Value: httpStatus},
		{Path: "last_error", Value: lastError},
		{Path: "updated_at", Value: now},
	})
	if err != nil {
		return fmt.Errorf("record action attempt %s: %w", id, err)
	}
	return nil
}

// Get reads an action.
func (a *ActionStore) Get(ctx context.Context, id string) (ActionRecord, error) {
	return getDoc[ActionRecord](ctx, a.doc(id), "action")
}

// ListByConversation lists a conversation's actions, newest first, at most limit. A conversation has
// few actions, so they are sorted here rather than with a composite index.
func (a *ActionStore) ListByConversation(ctx context.Context, conversationID string, limit int) ([]ActionRecord, error) {
	q := a.fs.Collection(Actions).Where("conversation_id", "==", conversationID)
	recs, err := queryAll[ActionRecord](ctx, q, "actions")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(recs, func(x, y ActionRecord) int { return y.CreatedAt.Compare(x.CreatedAt) })
	if len(recs) > limit {
		recs = recs[:limit]
	}
	return recs, nil
}
