package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/assistant"
)

// UsageCounter is a tenant's LLM calls in one quota period (usage/{tenant}_{period}).
type UsageCounter struct {
	TenantID string `firestore:"tenant_id" json:"tenant_id"`
	// Period is assistant.Period's "2026-11".
	Period string `firestore:"period" json:"period"`
	Count  int    `firestore:"count" json:"count"`
	// Limit is the quota the last reservation was checked against (0: unlimited).
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
// per-contact share (sender_windows/{hash of tenant, contact, period}). It is the contact's own
// document, not a field of the tenant's counter, so contacts do not contend on it.
type senderShare struct {
	TenantID  string    `firestore:"tenant_id"`
	Period    string    `firestore:"period"`
	Count     int       `firestore:"count"`
	Limit     int       `firestore:"limit"`
	UpdatedAt time.Time `firestore:"updated_at"`
	ExpireAt  time.Time `firestore:"expire_at"`
}

// senderWindow is one sender's rate window (sender_windows/{hash}).
type senderWindow struct {
	TenantID  string           `firestore:"tenant_id"`
	Window    assistant.Window `firestore:"window"`
	UpdatedAt time.Time        `firestore:"updated_at"`
	ExpireAt  time.Time        `firestore:"expire_at"`
}

// Guard is assistant.Guard on Firestore: the sender rate windows and the monthly LLM usage, each
// updated in one transaction, so both are exact under concurrent turns.
type Guard struct {
	fs   *firestore.Client
	opts Options
}

var _ assistant.Guard = (*Guard)(nil)

// NewGuard returns the Guard. opts.Retention is how long a call marker and an idle sender window
// are kept (DefaultRetention when zero): longer than a turn can be redone.
func NewGuard(db *DB, opts Options) *Guard {
	return &Guard{fs: db.fs, opts: opts.withDefaults()}
}

// UsageID is the id of a tenant's usage counter for a period.
func UsageID(tenantID, period string) string { return tenantID + "_" + period }

func (g *Guard) usageDoc(tenantID, period string) *firestore.DocumentRef {
	return g.fs.Collection(Usage).Doc(UsageID(tenantID, period))
}

// HitSender counts h against the sender's window with assistant.Window.Hit. It reads the window
// and writes it back with the read's update time as a precondition (a compare-and-set, redone at
// once when another hit came first), which stays quick when a burst of one sender's messages
// counts at once. One read, one write (none for a limit that limits nothing).
func (g *Guard) HitSender(ctx context.Context, h assistant.SenderHit) (assistant.RateDecision, error) {
	if h.Limit.Max <= 0 || h.Limit.Per <= 0 {
		return assistant.RateDecision{}, nil
	}
	ref := g.fs.Collection(SenderWindows).Doc(DocID("sender\x00" + h.TenantID + "\x00" + h.Sender))
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		var cur senderWindow
		snap, err := ref.Get(ctx)
		exists := err == nil
		switch {
		case status.Code(err) == codes.NotFound:
		case err != nil:
			return assistant.RateDecision{}, fmt.Errorf("read sender window: %w", err)
		default:
			if err := snap.DataTo(&cur); err != nil {
				return assistant.RateDecision{}, fmt.Errorf("decode sender window: %w", err)
			}
		}
		w, dec := cur.Window.Hit(h.MessageID, h.At, h.Limit)
		now := g.opts.Now()
		next := senderWindow{TenantID: h.TenantID, Window: w, UpdatedAt: now, ExpireAt: now.Add(g.opts.Retention)}
		if exists {
			_, err = ref.Update(ctx, []firestore.Update{
				{Path: "tenant_id", Value: next.TenantID},
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
			return assistant.RateDecision{}, fmt.Errorf("write sender window: %w", err)
		}
		return dec, nil
	}
	return assistant.RateDecision{}, fmt.Errorf("hit sender window: %d attempts lost to concurrent hits", maxCASAttempts)
}

// ReserveCall counts one LLM call of c.Period unless the tenant's quota or the contact's share
// is used up; a call id counted already is granted again without counting. It reads the
// tenant's counter, the call's marker and the contact's counter, then writes all three
// atomically with the counters' update times as preconditions (a compare-and-set, redone at
// once when another call came first). Three reads; three writes when granted, none otherwise.
// Without c.Sender there is no contact's counter (two of each).
func (g *Guard) ReserveCall(ctx context.Context, c assistant.CallReservation) (assistant.CallDecision, error) {
	refused := assistant.CallDecision{}
	if c.TenantID == "" || c.Period == "" || c.CallID == "" {
		return refused, errors.New("reserve call: tenant, period and call id are required")
	}
	ref := g.usageDoc(c.TenantID, c.Period)
	callRef := ref.Collection(UsageCalls).Doc(DocID(c.CallID))
	refs := []*firestore.DocumentRef{ref, callRef}
	var shareRef *firestore.DocumentRef
	if c.Sender != "" {
		shareRef = g.fs.Collection(SenderWindows).Doc(DocID("share\x00" + c.TenantID + "\x00" + c.Sender + "\x00" + c.Period))
		refs = append(refs, shareRef)
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		snaps, err := g.fs.GetAll(ctx, refs)
		if err != nil {
			return refused, fmt.Errorf("read usage: %w", err)
		}
		if snaps[1].Exists() {
			return assistant.CallDecision{Granted: true}, nil
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
			if u.Count >= c.Limit {
				return refused, nil
			}
		}
		share := senderShare{TenantID: c.TenantID, Period: c.Period}
		if shareRef != nil && snaps[2].Exists() {
			if err := snaps[2].DataTo(&share); err != nil {
				return refused, fmt.Errorf("decode contact's usage: %w", err)
			}
		}
		share.Limit = 0
		if c.SenderLimited {
			share.Limit = c.SenderLimit
			if share.Count >= c.SenderLimit {
				return assistant.CallDecision{SenderShare: true}, nil
			}
		}
		now := g.opts.Now()
		u.Count++
		u.Limit, u.UpdatedAt = limit, now
		share.Count++
		share.UpdatedAt, share.ExpireAt = now, shareExpiry(c.Period, now.Add(g.opts.Retention))
		// A transaction without reads takes no locks: it only makes the writes atomic.
		err = g.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			if err := casWrite(tx, ref, snaps[0], u, []firestore.Update{
				{Path: "count", Value: u.Count},
				{Path: "limit", Value: u.Limit},
				{Path: "updated_at", Value: now},
			}); err != nil {
				return err
			}
			if shareRef != nil {
				if err := casWrite(tx, shareRef, snaps[2], share, []firestore.Update{
					{Path: "count", Value: share.Count},
					{Path: "limit", Value: share.Limit},
					{Path: "updated_at", Value: now},
					{Path: ExpireAtField, Value: share.ExpireAt},
				}); err != nil {
					return err
				}
			}
			return tx.Create(callRef, usageCall{CallID: c.CallID, CreatedAt: now, ExpireAt: now.Add(g.opts.Retention)})
		}, firestore.MaxAttempts(1))
		if lostRace(err) {
			continue
		}
		if err != nil {
			return refused, fmt.Errorf("count llm call: %w", err)
		}
		return assistant.CallDecision{Granted: true}, nil
	}
	return refused, fmt.Errorf("reserve llm call: %d attempts lost to concurrent calls", maxCASAttempts)
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

// Usage is a tenant's counted LLM calls in period (0 when none). One read.
func (g *Guard) Usage(ctx context.Context, tenantID, period string) (int, error) {
	u, err := getDoc[UsageCounter](ctx, g.usageDoc(tenantID, period), "usage "+UsageID(tenantID, period))
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return u.Count, nil
}

// OverQuota lists, sorted, the tenants whose usage of period has reached their quota; quotas
// maps a tenant id to its monthly quota (tenants with an unlimited quota are left out). It reads
// the period's counters, one per tenant that made a call.
func (g *Guard) OverQuota(ctx context.Context, period string, quotas map[string]int) ([]string, error) {
	if len(quotas) == 0 {
		return nil, nil
	}
	counters, err := queryAll[UsageCounter](ctx, g.fs.Collection(Usage).Where("period", "==", period), "usage of "+period)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, u := range counters {
		if q, ok := quotas[u.TenantID]; ok && u.Count >= q {
			ids = append(ids, u.TenantID)
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
	return q.Guard.OverQuota(ctx, assistant.Period(now), quotas)
}
