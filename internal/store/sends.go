package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SourceAPI marks an outbound record made by the api service (POST /v1/messages).
const SourceAPI = "api"

// SourceConsole marks an outbound record made by the console's reply.
const SourceConsole = "console"

// OutboundParked is the state of a send held back because its tenant needs a new access token
// (auth_status needs_reauth): it is not sent, retried or dead-lettered, and a release (a new
// token) makes it pending again, to be sent once.
const OutboundParked = "parked"

// ErrIdempotencyMismatch is returned by CreateSend when the key is already used by a request
// with another body.
var ErrIdempotencyMismatch = errors.New("idempotency key already used with another request")

// Sends keeps the records of sends made on a tenant's behalf and the parked sends: the same
// outbound_messages records as replies (outbound.go), with the fields that let a send go out
// again from its record alone.
type Sends struct {
	fs   *firestore.Client
	opts Options
}

// NewSends returns the send record store.
func NewSends(db *DB, opts Options) *Sends {
	return &Sends{fs: db.fs, opts: opts.withDefaults()}
}

func (s *Sends) doc(key string) *firestore.DocumentRef {
	return s.fs.Collection(OutboundMessages).Doc(DocID(key))
}

// CreateSend creates the pending record of seed (keyed by seed.IdempotencyKey) unless it exists,
// and returns the record as stored and whether this call created it. A record that exists with
// another RequestHash is ErrIdempotencyMismatch: the key was used for another request.
func (s *Sends) CreateSend(ctx context.Context, seed OutboundRecord) (OutboundRecord, bool, error) {
	if seed.IdempotencyKey == "" {
		return OutboundRecord{}, false, errors.New("create send: no idempotency key")
	}
	ref := s.doc(seed.IdempotencyKey)
	type created struct {
		rec OutboundRecord
		new bool
	}
	c, err := runTx(ctx, s.fs, s.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (created, error) {
		rec, ok, err := getTx[OutboundRecord](tx, ref)
		if err != nil {
			return created{}, err
		}
		if !ok {
			now := s.opts.Now()
			rec := seed
			rec.State, rec.CreatedAt, rec.UpdatedAt, rec.ExpireAt = OutboundPending, now, now, now.Add(s.opts.Retention)
			rec.LatencyBucket = -1
			return created{rec, true}, tx.Create(ref, rec)
		}
		if rec.RequestHash != seed.RequestHash || rec.TenantID != seed.TenantID {
			return created{}, ErrIdempotencyMismatch
		}
		return created{rec, false}, nil
	})
	if errors.Is(err, ErrIdempotencyMismatch) {
		return OutboundRecord{}, false, ErrIdempotencyMismatch
	}
	if err != nil {
		return OutboundRecord{}, false, fmt.Errorf("create send %s: %w", seed.IdempotencyKey, err)
	}
	return c.rec, c.new, nil
}

// GetSend reads the record of key; ErrNotFound when there is none.
func (s *Sends) GetSend(ctx context.Context, key string) (OutboundRecord, error) {
	return getDoc[OutboundRecord](ctx, s.doc(key), "send record "+key)
}

// ParkRequest asks to park one send.
type ParkRequest struct {
	// Seed is the send: IdempotencyKey, TenantID, PhoneNumberID, To and Message at least. A
	// record that does not exist yet is created from it; an existing one takes its To, Message
	// and MessageType, so the release can send it from the record alone.
	Seed OutboundRecord
	// AuthError, when set, is the Graph auth error the send met with the tenant's token set at
	// TokenSetAt: the tenant is first marked needs_reauth with it, unless a newer token was set
	// since (then nothing is parked: the caller retries with the new token).
	AuthError  string
	TokenSetAt time.Time
}

// ParkResult says what Park did.
type ParkResult struct {
	// Parked: the record is parked (by this call or an earlier one).
	Parked bool
	// Marked: this call marked the tenant needs_reauth (the first send to meet the error).
	Marked bool
	// AuthStatus is the tenant's auth_status after the call.
	AuthStatus string
	// Tenant is the tenant as read in the transaction (with AuthStatus applied): when nothing
	// was parked because the tenant is ok, its current token.
	Tenant TenantRecord
}

// Park parks a send of a tenant that needs a new token, in one transaction with the tenant's
// auth_status: the record is parked only while the tenant is needs_reauth (marking it so first
// when p.AuthError is set), so a park and a release never miss each other (a release makes the
// tenant ok before it looks for parked records). A record already sent, failed or skipped is
// left alone.
func (s *Sends) Park(ctx context.Context, p ParkRequest) (ParkResult, error) {
	seed := p.Seed
	if seed.IdempotencyKey == "" || seed.TenantID == "" {
		return ParkResult{}, errors.New("park send: no idempotency key or tenant")
	}
	tref := s.fs.Collection(TenantsCollection).Doc(seed.TenantID)
	ref := s.doc(seed.IdempotencyKey)
	res, err := runTx(ctx, s.fs, s.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (ParkResult, error) {
		var res ParkResult
		now := s.opts.Now()
		td, err := needTx[tenantDoc](tx, tref)
		if err != nil {
			return res, err
		}
		cur, exists, err := getTx[OutboundRecord](tx, ref)
		if err != nil {
			return res, err
		}
		res.AuthStatus = td.AuthStatus
		res.Tenant = td.record()
		if res.Marked, err = markNeedsReauth(tx, tref, td, p.AuthError, p.TokenSetAt, now); err != nil {
			return res, err
		}
		if res.Marked {
			res.AuthStatus = AuthNeedsReauth
			res.Tenant.AuthStatus, res.Tenant.AuthLastError = AuthNeedsReauth, p.AuthError
		}
		if res.AuthStatus != AuthNeedsReauth {
			return res, nil
		}
		rec := seed
		if exists {
			rec = cur
			switch rec.State {
			case OutboundParked:
				res.Parked = true
				return res, nil
			case OutboundSent, OutboundFailed, OutboundSkipped:
				return res, nil
			}
			rec.To, rec.Recipient, rec.Message, rec.MessageType = seed.To, seed.Recipient, seed.Message, seed.MessageType
			if rec.ConversationID == "" {
				rec.ConversationID = seed.ConversationID
			}
			if rec.PhoneNumberID == "" {
				rec.PhoneNumberID = seed.PhoneNumberID
			}
		} else {
			rec.CreatedAt, rec.LatencyBucket = now, -1
		}
		rec.State, rec.ParkedAt, rec.SendingSince, rec.UpdatedAt = OutboundParked, now, time.Time{}, now
		rec.ReleasePending, rec.ExpireAt = false, now.Add(s.opts.Retention)
		if p.AuthError != "" {
			rec.LastError = "parked: " + p.AuthError
		}
		res.Parked = true
		return res, tx.Set(ref, rec)
	})
	if err != nil {
		return ParkResult{}, fmt.Errorf("park send %s: %w", seed.IdempotencyKey, err)
	}
	return res, nil
}

// markNeedsReauth marks the tenant of td (at tref) needs_reauth with authErr, the Graph auth
// error a call met with the token set at tokenSetAt, and reports whether it did: not when authErr
// is empty, the tenant is marked already, or a newer token was set since.
func markNeedsReauth(tx *firestore.Transaction, tref *firestore.DocumentRef, td tenantDoc, authErr string, tokenSetAt, now time.Time) (bool, error) {
	if authErr == "" || td.AuthStatus == AuthNeedsReauth || !sameInstant(td.TokenSetAt, tokenSetAt) {
		return false, nil
	}
	return true, tx.Update(tref, []firestore.Update{
		{Path: "auth_status", Value: AuthNeedsReauth},
		{Path: "auth_last_error", Value: authErr},
		{Path: "updated_at", Value: now},
	})
}

// MarkNeedsReauth marks tenantID needs_reauth after a Graph call other than a send (an upload,
// a template call, a media download) met authErr with the token set at tokenSetAt, as Park does
// for a send: not when a newer token was set since or the tenant is marked already. marked says
// this call marked it. One transaction.
func (s *Sends) MarkNeedsReauth(ctx context.Context, tenantID, authErr string, tokenSetAt time.Time) (marked bool, err error) {
	tref := s.fs.Collection(TenantsCollection).Doc(tenantID)
	marked, err = runTx(ctx, s.fs, s.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		td, err := needTx[tenantDoc](tx, tref)
		if err != nil {
			return false, err
		}
		return markNeedsReauth(tx, tref, td, authErr, tokenSetAt, s.opts.Now())
	})
	if err != nil {
		return false, fmt.Errorf("mark tenant %s needs_reauth: %w", tenantID, err)
	}
	return marked, nil
}

// ReleaseParked releases the parked sends of tenantID once its auth_status is ok again: each
// parked record becomes pending, release_pending and its release generation one higher, in a
// transaction that checks the tenant is ok (a tenant marked needs_reauth again keeps its sends
// parked). It returns every record waiting for its release task, oldest park first, including
// those of an earlier release that was interrupted before it enqueued them: the caller enqueues
// one task per record, named after the key and the generation, so a second release creates
// nothing twice, and the record's state makes each send go out once.
func (s *Sends) ReleaseParked(ctx context.Context, tenantID string) ([]OutboundRecord, error) {
	if tenantID == "" {
		return nil, errors.New("release parked sends: no tenant")
	}
	col := s.fs.Collection(OutboundMessages)
	parked, err := queryAll[OutboundRecord](ctx, col.Where("tenant_id", "==", tenantID).Where("state", "==", OutboundParked), "parked sends")
	if err != nil {
		return nil, err
	}
	tref := s.fs.Collection(TenantsCollection).Doc(tenantID)
	for _, p := range parked {
		ref := s.doc(p.IdempotencyKey)
		_, err := runTx(ctx, s.fs, s.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (struct{}, error) {
			td, err := readTx[tenantDoc](tx, tref)
			if err != nil {
				return struct{}{}, err
			}
			if td.AuthStatus != AuthOK {
				return struct{}{}, fmt.Errorf("tenant %s is %v, not ok: its sends stay parked", tenantID, td.AuthStatus)
			}
			rec, err := readTx[OutboundRecord](tx, ref)
			if err != nil {
				return struct{}{}, err
			}
			if rec.State != OutboundParked {
				return struct{}{}, nil
			}
			rec.State, rec.ReleasePending, rec.UpdatedAt = OutboundPending, true, s.opts.Now()
			rec.ReleaseGen++
			return struct{}{}, tx.Set(ref, rec)
		})
		if err != nil {
			return nil, fmt.Errorf("release parked send %s: %w", p.IdempotencyKey, err)
		}
	}
	waiting, err := queryAll[OutboundRecord](ctx, col.Where("tenant_id", "==", tenantID).Where("release_pending", "==", true), "released sends")
	if err != nil {
		return nil, err
	}
	sort.SliceStable(waiting, func(i, j int) bool {
		a, b := waiting[i], waiting[j]
		if !a.ParkedAt.Equal(b.ParkedAt) {
			return a.ParkedAt.Before(b.ParkedAt)
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.IdempotencyKey < b.IdempotencyKey
	})
	return waiting, nil
}

// ReleaseDone clears release_pending once the release task of generation gen runs, so a later
// release does not enqueue it again.
func (s *Sends) ReleaseDone(ctx context.Context, key string, gen int64) error {
	ref := s.doc(key)
	_, err := runTx(ctx, s.fs, s.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (struct{}, error) {
		rec, err := readTx[OutboundRecord](tx, ref)
		if err != nil {
			return struct{}{}, err
		}
		if !rec.ReleasePending || rec.ReleaseGen != gen {
			return struct{}{}, nil
		}
		return struct{}{}, tx.Update(ref, []firestore.Update{{Path: "release_pending", Value: firestore.Delete}})
	})
	if status.Code(err) == codes.NotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("release done %s: %w", key, err)
	}
	return nil
}

// CountParked counts the parked sends of tenantID.
func (s *Sends) CountParked(ctx context.Context, tenantID string) (int64, error) {
	n, err := count(ctx, s.fs.Collection(OutboundMessages).Where("tenant_id", "==", tenantID).Where("state", "==", OutboundParked))
	if err != nil {
		return 0, fmt.Errorf("count parked sends of %s: %w", tenantID, err)
	}
	return n, nil
}

// sameInstant compares times to the microsecond, Firestore's precision: a time a caller kept from
// before it was stored still matches the stored one.
func sameInstant(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}
