package store

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// leaseTaken is a time before any lease a holder took: a released lease's expires_at is the
// zero time (Release), which the stranded query must not find.
var leaseTaken = time.Unix(0, 0).UTC()

// Stranded lists up to limit conversations whose lease expired before before without being
// released, oldest expiry first: their holder died (a SIGKILL, on its task's last attempt, leaves
// no retry to take over) or could not release. Only they can hold messages in their inbox that no
// task will run; a drain that ends releases its lease, and one that stops on an error releases it
// for its task's retry. A conversation whose holder is alive renews its lease with each commit, so
// a grace subtracted from now by the caller keeps a slow turn from being swept.
//
// The query is a range on lease.expires_at alone, served by Firestore's automatic single-field
// index: it reads only the conversations it returns, never the live ones, and needs no field
// beyond the lease, so conversations stranded before the sweep existed are found as well. One
// query.
func (c *ConversationStore) Stranded(ctx context.Context, before time.Time, limit int) ([]Conversation, error) {
	if limit <= 0 {
		limit = 100
	}
	q := c.fs.Collection(Conversations).
		Where("lease.expires_at", ">", leaseTaken).
		Where("lease.expires_at", "<", before).
		OrderBy("lease.expires_at", firestore.Asc).
		Limit(limit)
	return queryAll[Conversation](ctx, q, "stranded conversations")
}

// ClearExpiredLease releases the conversation's lease when lease (holder and fence) is still
// the conversation's and has expired: the sweep does it for a stranded conversation whose inbox
// it found empty, so that it stops being Stranded. A lease taken since (a higher fence) or renewed
// is left alone. The fencing number stays, as Release leaves it. It reports whether it released.
// One transaction: one read, and one write when it releases.
func (c *ConversationStore) ClearExpiredLease(ctx context.Context, conversationID string, lease Lease) (bool, error) {
	cleared, err := c.releaseLease(ctx, conversationID, func(cur Lease) bool {
		return cur.Holder == lease.Holder && cur.Fence == lease.Fence && cur.Free(c.opts.Now())
	})
	if err != nil {
		return false, fmt.Errorf("clear expired conversation lease: %w", err)
	}
	return cleared, nil
}
