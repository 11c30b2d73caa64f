package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/turnstate"
)

// UsageCounter is a tenant's LLM calls in one quota period (usage/{tenant}_{period}), and also
// the shape of each of its shards (usage/{tenant}_{period}/shards/{nn}, see usageShards): the
// tenant's usage is the document's count plus its shards'.
type UsageCounter struct {
	TenantID string `firestore:"tenant_id" json:"tenant_id"`
	// Period is turnstate.Period's "2026-11".
	Period string `firestore:"period" json:"period"`
	Count  int    `firestore:"count" json:"count"`
	// Limit is the quota the last reservation that wrote this document was checked against
	// (0: unlimited).
	Limit     int       `firestore:"limit" json:"limit"`
	UpdatedAt time.Time `firestore:"updated_at" json:"updated_at"`
}

// usageCall marks one call counted (usage/{tenant}_{period}/calls/{call id}).
type usageCall struct {
	CallID    string    `firestore:"call_id"`
	CreatedAt time.Time `firestore:"created_at"`
	ExpireAt  time.Time `firestore:"expire_at"`
}

// senderShare is one contact's LLM calls in one quota period, counted against the tenant's
// per-contact share (sender_windows/{keyed id of tenant, contact, period}). It is the contact's
// own document, not a field of the tenant's counter, so contacts do not contend on it.
type senderShare struct {
	TenantID  string    `firestore:"tenant_id"`
	ContactID string    `firestore:"contact_id,omitempty"`
	Period    string    `firestore:"period"`
	Count     int       `firestore:"count"`
	Limit     int       `firestore:"limit"`
	UpdatedAt time.Time `firestore:"updated_at"`
	ExpireAt  time.Time `firestore:"expire_at"`
}

// senderWindow is one sender's rate window (sender_windows/{keyed id of tenant and contact}).
type senderWindow struct {
	TenantID  string           `firestore:"tenant_id"`
	ContactID string           `firestore:"contact_id,omitempty"`
	Window    turnstate.Window `firestore:"window"`
	UpdatedAt time.Time        `firestore:"updated_at"`
	ExpireAt  time.Time        `firestore:"expire_at"`
}

// Guard is assistant.Guard on Firestore: the sender rate windows and the monthly LLM usage, each
// updated in one transaction. The windows and the contacts' shares are exact under concurrent
// turns; the tenant's quota is exact for its last ExactTail calls and kept within the margin
// ExactTail documents before them, where its calls are spread over shards.
type Guard struct {
	db   *DB
	fs   *firestore.Client
	opts Options
	// shard turns over the usage shards (nextShard).
	shard *atomic.Uint64
}

// NewGuard returns the Guard. opts.Retention is how long a call marker and an idle sender window
// are kept (DefaultRetention when zero): longer than a turn can be redone.
func NewGuard(db *DB, opts Options) *Guard {
	shard := new(atomic.Uint64)
	shard.Store(rand.Uint64())
	return &Guard{db: db, fs: db.fs, opts: opts.withDefaults(), shard: shard}
}

// UsageID is the id of a tenant's usage counter for a period.
func UsageID(tenantID, period string) string { return tenantID + "_" + period }

func (g *Guard) usageDoc(tenantID, period string) *firestore.DocumentRef {
	return g.fs.Collection(Usage).Doc(UsageID(tenantID, period))
}

// HitSender counts h against the sender's window with turnstate.Window.Hit. It reads the window
// and writes it back with the read's update time as a precondition (a compare-and-set, redone at
// once when another hit came first), which stays quick when a burst of one sender's messages
// counts at once. One read, one write (none for a limit that limits nothing).
func (g *Guard) HitSender(ctx context.Context, h turnstate.SenderHit) (turnstate.RateDecision, error) {
	if h.Limit.Max <= 0 || h.Limit.Per <= 0 {
		return turnstate.RateDecision{}, nil
	}
	if h.Sender == "" {
		return turnstate.RateDecision{}, fmt.Errorf("hit sender window: %w", errNoContact)
	}
	ref := g.fs.Collection(SenderWindows).Doc(g.db.keyer.ID("sender", h.TenantID, h.Sender))
	var legacy *firestore.DocumentRef
	if h.LegacySender != "" && g.db.legacyReads(ctx) {
		legacy = g.fs.Collection(SenderWindows).Doc(legacySenderWindowID(h.TenantID, h.LegacySender))
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		var cur senderWindow
		snap, exists, err := g.readSeeded(ctx, ref, legacy, &cur)
		if err != nil {
			return turnstate.RateDecision{}, fmt.Errorf("read sender window: %w", err)
		}
		w, dec := cur.Window.Hit(h.MessageID, h.At, h.Limit)
		now := g.opts.Now()
		next := senderWindow{TenantID: h.TenantID, ContactID: h.Sender, Window: w, UpdatedAt: now, ExpireAt: now.Add(g.opts.Retention)}
		if exists {
			_, err = ref.Update(ctx, []firestore.Update{
				{Path: "tenant_id", Value: next.TenantID},
				{Path: "contact_id", Value: next.ContactID},
				{Path: "window", Value: next.Window},
				{Path: "updated_at", Value: next.UpdatedAt},
				{Path: ExpireAtField, Value: next.ExpireAt},
			}, firestore.LastUpdateTime(snap.UpdateTime))
		} else {
			_, err = ref.Create(ctx, next)
		}
		if lostRace(err) {
			continue
		}
		if err != nil {
			return turnstate.RateDecision{}, fmt.Errorf("write sender window: %w", err)
		}
		return dec, nil
	}
	return turnstate.RateDecision{}, fmt.Errorf("hit sender window: %d attempts lost to concurrent hits", maxCASAttempts)
}

// readSeeded reads the document at ref into v and reports whether it exists; when it does not
// and legacy (the same counter named after the contact's phone, before contacts) does, v is
// legacy's, so the counter goes on from it. snap is ref's, for the compare-and-set.
func (g *Guard) readSeeded(ctx context.Context, ref, legacy *firestore.DocumentRef, v any) (*firestore.DocumentSnapshot, bool, error) {
	refs := []*firestore.DocumentRef{ref}
	if legacy != nil {
		refs = append(refs, legacy)
	}
	snaps, err := g.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, false, err
	}
	for _, sn := range snaps {
		if sn.Exists() {
			if err := sn.DataTo(v); err != nil {
				return nil, false, fmt.Errorf("decode: %w", err)
			}
			break
		}
	}
	return snaps[0], snaps[0].Exists(), nil
}

// usageShards is how many shard documents take a tenant's monthly LLM calls
// (usage/{tenant}_{period}/shards/{00…31}). Firestore sustains about one write a second on a
// document: spread over 32 shards, a tenant making 20 calls a second writes each about 0.6
// times a second, and up to 32 calls a second stay under one write a second a shard.
const usageShards = 32

// ExactTail is how many of a tenant's last calls before its monthly quota are counted exactly:
// while its usage is below quota − ExactTail, a call is counted on a shard (no contention, the
// quota checked against the sum of the shards as read before the write); from there on, on the
// tenant's one usage document with a compare-and-set, one grant after another, so the last
// calls of the quota are serialised as before sharding. A quota of ExactTail or less is exact
// throughout.
//
// The margin: the quota can be passed only by calls that were in flight (read the usage below
// quota − ExactTail, not yet written) when the usage entered the tail, and are written after
// the tail's last grant, so at most the tenant's reservations in flight at that moment, and
// none unless one of them outlasts the tail's serialised grants (ExactTail of them), or more
// than ExactTail are in flight at once. The cost of exactness is confined to the tail: its
// calls contend on one document again (about one a second), as the quota runs out.
const ExactTail = 50

// ReserveCall counts one LLM call of c.Period unless the tenant's quota or the contact's share
// is used up; a call id counted already is granted again without counting. It reads the
// call's marker, the contact's counter, the tenant's usage document and (for a limited quota)
// the sum of the tenant's usage shards, then writes atomically the marker, the contact's
// counter (compare-and-set on its update time: the share is exact) and one count: an
// increment of one shard, or, within ExactTail of the quota, the usage document
// (compare-and-set). A lost compare-and-set is redone at once. Four reads (three for an
// unlimited quota); three writes when granted, none otherwise. Without c.Sender there is no
// contact's counter.
func (g *Guard) ReserveCall(ctx context.Context, c turnstate.CallReservation) (turnstate.CallDecision, error) {
	refused := turnstate.CallDecision{}
	if c.TenantID == "" || c.Period == "" || c.CallID == "" {
		return refused, errors.New("reserve call: tenant, period and call id are required")
	}
	ref := g.usageDoc(c.TenantID, c.Period)
	callRef := ref.Collection(UsageCalls).Doc(DocID(c.CallID))
	refs := []*firestore.DocumentRef{ref, callRef}
	var shareRef *firestore.DocumentRef
	if c.Sender != "" {
		shareRef = g.fs.Collection(SenderWindows).Doc(g.db.keyer.ID("share", c.TenantID, c.Sender, c.Period))
		refs = append(refs, shareRef)
		if c.LegacySender != "" && g.db.legacyReads(ctx) {
			// Until the migration, a share counted before contacts goes on from its count.
			refs = append(refs, g.fs.Collection(SenderWindows).Doc(legacyShareID(c.TenantID, c.LegacySender, c.Period)))
		}
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		snaps, sharded, err := g.readUsage(ctx, refs, c.Limited)
		if err != nil {
			return refused, err
		}
		if snaps[1].Exists() {
			return turnstate.CallDecision{Granted: true}, nil
		}
		u := UsageCounter{TenantID: c.TenantID, Period: c.Period}
		if snaps[0].Exists() {
			if err := snaps[0].DataTo(&u); err != nil {
				return refused, fmt.Errorf("decode usage: %w", err)
			}
		}
		limit := 0
		if c.Limited {
			limit = c.Limit
			if u.Count+sharded >= c.Limit {
				return refused, nil
			}
		}
		share := senderShare{TenantID: c.TenantID, Period: c.Period}
		for _, sn := range snaps[2:] {
			if sn.Exists() {
				if err := sn.DataTo(&share); err != nil {
					return refused, fmt.Errorf("decode contact's usage: %w", err)
				}
				break
			}
		}
		share.Limit = 0
		if c.SenderLimited {
			share.Limit = c.SenderLimit
			if share.Count >= c.SenderLimit {
				return turnstate.CallDecision{SenderShare: true}, nil
			}
		}
		tail := c.Limited && u.Count+sharded >= c.Limit-ExactTail
		now := g.opts.Now()
		u.Count++
		u.Limit, u.UpdatedAt = limit, now
		share.Count++
		share.ContactID = c.Sender
		share.UpdatedAt, share.ExpireAt = now, shareExpiry(c.Period, now.Add(g.opts.Retention))
		err = g.writeCall(ctx, c, callWrite{ref: ref, callRef: callRef, shareRef: shareRef, snaps: snaps,
			usage: u, share: share, tail: tail, limit: limit, now: now})
		if lostRace(err) {
			continue
		}
		if err != nil {
			return refused, fmt.Errorf("count llm call: %w", err)
		}
		return turnstate.CallDecision{Granted: true}, nil
	}
	return refused, fmt.Errorf("reserve llm call: %d attempts lost to concurrent calls", maxCASAttempts)
}

// callWrite is what ReserveCall writes for one granted call, and the snapshots it read.
type callWrite struct {
	ref, callRef, shareRef *firestore.DocumentRef
	snaps                  []*firestore.DocumentSnapshot
	usage                  UsageCounter
	share                  senderShare
	// tail: count on the usage document (compare-and-set) instead of a shard.
	tail  bool
	limit int
	now   time.Time
}

// writeCall writes a granted call atomically: its count, the contact's counter and the call's
// marker. A transaction without reads takes no locks: it only makes the writes atomic.
func (g *Guard) writeCall(ctx context.Context, c turnstate.CallReservation, w callWrite) error {
	return g.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if w.tail {
			if err := casWrite(tx, w.ref, w.snaps[0], w.usage, []firestore.Update{
				{Path: "count", Value: w.usage.Count},
				{Path: "limit", Value: w.usage.Limit},
				{Path: "updated_at", Value: w.now},
			}); err != nil {
				return err
			}
		} else if err := tx.Set(g.nextShard(w.ref), map[string]any{
			"tenant_id": c.TenantID, "period": c.Period, "count": firestore.Increment(1), "limit": w.limit, "updated_at": w.now,
		}, firestore.MergeAll); err != nil {
			return err
		}
		if w.shareRef != nil {
			if err := casWrite(tx, w.shareRef, w.snaps[2], w.share, []firestore.Update{
				{Path: "count", Value: w.share.Count},
				{Path: "limit", Value: w.share.Limit},
				{Path: "updated_at", Value: w.now},
				{Path: ExpireAtField, Value: w.share.ExpireAt},
			}); err != nil {
				return err
			}
		}
		return tx.Create(w.callRef, usageCall{CallID: c.CallID, CreatedAt: w.now, ExpireAt: w.now.Add(g.opts.Retention)})
	}, firestore.MaxAttempts(1))
}

// readUsage reads refs (the usage document first) and, when sum is set, the sum of the usage
// document's shards, at the same time.
func (g *Guard) readUsage(ctx context.Context, refs []*firestore.DocumentRef, sum bool) ([]*firestore.DocumentSnapshot, int, error) {
	type result struct {
		n   int
		err error
	}
	sharded := make(chan result, 1)
	if sum {
		go func() {
			n, err := shardSum(ctx, refs[0])
			sharded <- result{n, err}
		}()
	} else {
		sharded <- result{}
	}
	snaps, err := g.fs.GetAll(ctx, refs)
	s := <-sharded
	if err != nil {
		return nil, 0, fmt.Errorf("read usage: %w", err)
	}
	if s.err != nil {
		return nil, 0, s.err
	}
	return snaps, s.n, nil
}

// nextShard is the shard of usage document ref that takes the next call. The shards are taken
// in turn from a random start, rather than at random: one instance's calls spread evenly (a
// shard takes no more than its share however the dice fall) and its concurrent calls land on
// different shards; instances starting at random places spread the same way between them.
func (g *Guard) nextShard(ref *firestore.DocumentRef) *firestore.DocumentRef {
	return ref.Collection(UsageShards).Doc(fmt.Sprintf("%02d", g.shard.Add(1)%usageShards))
}

// shardSum is the sum of the counts of usage document ref's shards: one aggregation query,
// billed one read.
func shardSum(ctx context.Context, ref *firestore.DocumentRef) (int, error) {
	res, err := ref.Collection(UsageShards).NewAggregationQuery().WithSum("count", "n").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("sum usage shards: %w", err)
	}
	n, err := aggregateInt(res["n"])
	if err != nil {
		return 0, fmt.Errorf("sum usage shards: %w", err)
	}
	return int(n), nil
}

// aggregateInt reads a sum from an aggregation query's result.
func aggregateInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case nil:
		return 0, nil
	default:
		// The client returns a protobuf Value; a sum over no document is 0 or null.
		if pv, ok := v.(interface {
			GetIntegerValue() int64
			GetDoubleValue() float64
		}); ok {
			return pv.GetIntegerValue() + int64(pv.GetDoubleValue()), nil
		}
		return 0, fmt.Errorf("unexpected result type %T", v)
	}
}

// casWrite writes a counter read as snap in tx: the updates when it existed, on condition that it
// has not changed since; a create (which fails if another came first) otherwise.
func casWrite(tx *firestore.Transaction, ref *firestore.DocumentRef, snap *firestore.DocumentSnapshot, doc any, updates []firestore.Update) error {
	if snap.Exists() {
		return tx.Update(ref, updates, firestore.LastUpdateTime(snap.UpdateTime))
	}
	return tx.Create(ref, doc)
}

// shareExpiry is when a contact's counter of period may be deleted: not before the period is
// over, however short the retention.
func shareExpiry(period string, retained time.Time) time.Time {
	start, err := time.Parse("2006-01", period)
	if err != nil {
		return retained
	}
	if end := start.AddDate(0, 1, 1); end.After(retained) {
		return end
	}
	return retained
}

// lostRace reports whether a compare-and-set write lost to another write: the document changed
// since it was read, or was created meanwhile.
func lostRace(err error) bool {
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		return true
	}
	return false
}

// maxCASAttempts bounds a compare-and-set's attempts. Each attempt lost means another write
// succeeded, so a burst of n writers needs at most n attempts.
const maxCASAttempts = 200

// Usage is a tenant's counted LLM calls in period (0 when none): its usage document's count
// and the sum of its shards. Two reads.
func (g *Guard) Usage(ctx context.Context, tenantID, period string) (int, error) {
	ref := g.usageDoc(tenantID, period)
	snaps, sharded, err := g.readUsage(ctx, []*firestore.DocumentRef{ref}, true)
	if err != nil {
		return 0, fmt.Errorf("usage %s: %w", UsageID(tenantID, period), err)
	}
	return usageCount(snaps[0], sharded)
}

// usageCount adds a usage document's own count to the sum of its shards.
func usageCount(snap *firestore.DocumentSnapshot, sharded int) (int, error) {
	if !snap.Exists() {
		return sharded, nil
	}
	var u UsageCounter
	if err := snap.DataTo(&u); err != nil {
		return 0, fmt.Errorf("decode usage %s: %w", snap.Ref.ID, err)
	}
	return u.Count + sharded, nil
}

// OverQuota lists, sorted, the tenants whose usage of period has reached their quota; quotas
// maps a tenant id to its monthly quota (tenants with an unlimited quota are left out). It
// reads two documents' worth per tenant of quotas: its usage document and the sum of its
// shards.
func (g *Guard) OverQuota(ctx context.Context, period string, quotas map[string]int) ([]string, error) {
	var ids []string
	for id, q := range quotas {
		n, err := g.Usage(ctx, id, period)
		if err != nil {
			return nil, err
		}
		if n >= q {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// QuotaReport finds the tenants over their monthly LLM quota, for the health report.
type QuotaReport struct {
	Tenants *Tenants
	Guard   *Guard
}

// TenantsOverQuota lists the tenants whose usage of now's month has reached their quota. It
// reads every tenant and the month's usage counters.
func (q QuotaReport) TenantsOverQuota(ctx context.Context, now time.Time) ([]string, error) {
	recs, err := q.Tenants.List(ctx)
	if err != nil {
		return nil, err
	}
	quotas := map[string]int{}
	for _, r := range recs {
		if limit, limited := r.Tenant.Quota.MonthlyLLMCalls(); limited {
			quotas[r.Tenant.ID] = limit
		}
	}
	return q.Guard.OverQuota(ctx, turnstate.Period(now), quotas)
}
