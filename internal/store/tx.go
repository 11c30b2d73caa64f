package store

import (
	"context"

	"cloud.google.com/go/firestore"
)

// runTx runs f in a read-write transaction and returns the value of the attempt that committed.
// Firestore runs f again whenever the transaction aborts (a concurrent write to a document it
// read), so f builds its result afresh on every attempt and runTx keeps only the last one: state
// filled in by an aborted attempt never reaches the caller, nor a later attempt's writes.
func runTx[T any](ctx context.Context, fs *firestore.Client, h *txHooks, f func(context.Context, *firestore.Transaction) (T, error)) (T, error) {
	var out T
	attempt := 0
	err := fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		attempt++
		h.beforeAttempt(attempt)
		v, err := f(ctx, tx)
		if err != nil {
			return err
		}
		if err := h.afterAttempt(attempt); err != nil {
			return err
		}
		out = v
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// txHooks let tests force a transaction to retry (see export_test.go); nil in production.
type txHooks struct {
	// before runs at the start of each attempt: a test writes to the document between attempts.
	before func(attempt int)
	// after runs once f has done its work; an Aborted error makes Firestore retry.
	after func(attempt int) error
}

func (h *txHooks) beforeAttempt(n int) {
	if h != nil && h.before != nil {
		h.before(n)
	}
}

func (h *txHooks) afterAttempt(n int) error {
	if h != nil && h.after != nil {
		return h.after(n)
	}
	return nil
}
