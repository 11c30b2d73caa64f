package store

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// runTx runs f in a read-write transaction and returns the value of the attempt that committed.
// Firestore runs f again whenever the transaction aborts (a concurrent write to a document it
// read), so f builds its result afresh on every attempt and runTx keeps only the last one: state
// filled in by an aborted attempt never reaches the caller, nor a later attempt's writes. opts
// are the client's (firestore.MaxAttempts for a document many turns contend on).
func runTx[T any](ctx context.Context, fs *firestore.Client, h *txHooks, f func(context.Context, *firestore.Transaction) (T, error),
	opts ...firestore.TransactionOption) (T, error) {
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
	}, opts...)
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// readTx reads the document at ref in tx and decodes it into a new T; a missing document is
// Firestore's own NotFound error (status.Code(err) == codes.NotFound). The value is new on every
// call, so on every attempt of a transaction: DataTo leaves the fields a document lacks as they
// were, and decoding into the value an aborted attempt filled could write its stale fields back.
func readTx[T any](tx *firestore.Transaction, ref *firestore.DocumentRef) (T, error) {
	var v T
	snap, err := tx.Get(ref)
	if err != nil {
		return v, err
	}
	if err := snap.DataTo(&v); err != nil {
		return v, err
	}
	return v, nil
}

// getTx is readTx for a document that may be missing: ok is false, and err nil, when it is.
func getTx[T any](tx *firestore.Transaction, ref *firestore.DocumentRef) (v T, ok bool, err error) {
	v, err = readTx[T](tx, ref)
	if status.Code(err) == codes.NotFound {
		return v, false, nil
	}
	return v, err == nil, err
}

// needTx is getTx for a document the call needs: ErrNotFound when it is missing.
func needTx[T any](tx *firestore.Transaction, ref *firestore.DocumentRef) (T, error) {
	v, ok, err := getTx[T](tx, ref)
	if err == nil && !ok {
		err = ErrNotFound
	}
	return v, err
}

// existsTx reports whether the document at ref exists, read in tx like any other document the
// transaction depends on.
func existsTx(tx *firestore.Transaction, ref *firestore.DocumentRef) (bool, error) {
	_, err := tx.Get(ref)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	return err == nil, err
}

// createIfMissing creates doc at ref in tx unless a document is there already.
func createIfMissing(tx *firestore.Transaction, ref *firestore.DocumentRef, doc any) error {
	exists, err := existsTx(tx, ref)
	if err != nil || exists {
		return err
	}
	return tx.Create(ref, doc)
}

// requireTx is existsTx for a document the call needs: ErrNotFound when it is missing.
func requireTx(tx *firestore.Transaction, ref *firestore.DocumentRef) error {
	exists, err := existsTx(tx, ref)
	if err == nil && !exists {
		err = ErrNotFound
	}
	return err
}

// updateTx reads the document at ref (readTx: a missing one is Firestore's NotFound error) in a
// transaction, lets change edit it, and writes it back whole (Set) when change reports that it
// changed it. It returns the document as the attempt that committed left it; change may run
// more than once, each time on the document read afresh.
func updateTx[T any](ctx context.Context, fs *firestore.Client, h *txHooks, ref *firestore.DocumentRef,
	change func(*T) (bool, error)) (T, error) {
	return runTx(ctx, fs, h, func(ctx context.Context, tx *firestore.Transaction) (T, error) {
		v, err := readTx[T](tx, ref)
		if err != nil {
			return v, err
		}
		changed, err := change(&v)
		if err != nil || !changed {
			return v, err
		}
		return v, tx.Set(ref, v)
	})
}

// decodeAll decodes the snapshots of a GetAll (in a transaction or not), in order, each into a
// new T; nil where the document does not exist. The first error is DataTo's.
func decodeAll[T any](snaps []*firestore.DocumentSnapshot) ([]*T, error) {
	out := make([]*T, len(snaps))
	for i, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		v := new(T)
		if err := sn.DataTo(v); err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// firstExisting decodes, into a new T, the first of snaps whose document exists (a record and
// the ids it was kept under before: the first found wins); ok is false when none does. The
// documents after it are not decoded.
func firstExisting[T any](snaps []*firestore.DocumentSnapshot) (v T, ok bool, err error) {
	for _, sn := range snaps {
		if sn.Exists() {
			err = sn.DataTo(&v)
			return v, err == nil, err
		}
	}
	return v, false, nil
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
