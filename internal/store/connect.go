package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/tenant"
)

// ConnectStates holds one document per Embedded Signup state used (by its nonce), so a connect
// link works once. Documents expire (expire_at) after the link would have anyway.
const ConnectStates = "connect_states"

// ErrStateUsed is returned by UseConnectState for a state used before.
var ErrStateUsed = errors.New("connect state already used")

// UseConnectState records the one use of the connect state nonce of tenantID; ErrStateUsed when
// it was used already.
func (s *Tenants) UseConnectState(ctx context.Context, nonce, tenantID string, expireAt time.Time) error {
	if nonce == "" {
		return errors.New("use connect state: empty nonce")
	}
	_, err := s.fs.Collection(ConnectStates).Doc(nonce).Create(ctx, map[string]any{
		"tenant_id": tenantID, "used_at": s.now(), ExpireAtField: expireAt,
	})
	if status.Code(err) == codes.AlreadyExists {
		return ErrStateUsed
	}
	if err != nil {
		return fmt.Errorf("use connect state: %w", err)
	}
	return nil
}

// ConnectStateUsed reports whether the connect state nonce was used (UseConnectState), so the
// connect page can say so before anyone presses its button.
func (s *Tenants) ConnectStateUsed(ctx context.Context, nonce string) (bool, error) {
	if nonce == "" || strings.Contains(nonce, "/") {
		return false, errors.New("connect state used: bad nonce")
	}
	_, err := s.fs.Collection(ConnectStates).Doc(nonce).Get(ctx)
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound:
		return false, nil
	}
	return false, fmt.Errorf("read connect state: %w", err)
}

// CheckPhoneNumbers returns tenant.Problems naming each of nums another tenant owns, and writes
// nothing: Embedded Signup checks before it subscribes the app, and AddPhoneNumbers checks again
// when it writes.
func (s *Tenants) CheckPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) error {
	refs := make([]*firestore.DocumentRef, 0, len(nums))
	for _, p := range nums {
		if p.PhoneNumberID == "" || strings.Contains(p.PhoneNumberID, "/") {
			return tenant.Problems{{Path: "phone_numbers", Message: fmt.Sprintf("bad phone number id %q", p.PhoneNumberID)}}
		}
		refs = append(refs, s.numberDoc(p.PhoneNumberID))
	}
	if len(refs) == 0 {
		return nil
	}
	snaps, err := s.fs.GetAll(ctx, refs)
	if err != nil {
		return fmt.Errorf("check phone numbers of %s: %w", id, err)
	}
	return foreignNumbers(snaps, nums, id)
}

// AddPhoneNumbers adds nums to tenant id (its phone_numbers and the phone_numbers index) in one
// transaction, as Embedded Signup registers the numbers of a WABA. Numbers the tenant has
// already are left as they are; a number another tenant owns refuses the whole call with
// tenant.Problems and nothing is written. It returns the numbers added.
func (s *Tenants) AddPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) ([]string, error) {
	if id == "" {
		return nil, ErrNotFound
	}
	ref := s.tenantDoc(id)
	var added []string
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		added = nil
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var d tenantDoc
		if err := snap.DataTo(&d); err != nil {
			return err
		}
		refs := make([]*firestore.DocumentRef, 0, len(nums))
		for _, p := range nums {
			refs = append(refs, s.numberDoc(p.PhoneNumberID))
		}
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return err
		}
		if err := foreignNumbers(snaps, nums, id); err != nil {
			return err
		}
		now := s.now()
		list := d.PhoneNumbers
		for _, p := range nums {
			if d.OwnsNumber(p.PhoneNumberID) {
				continue
			}
			list = append(list, p)
			added = append(added, p.PhoneNumberID)
			if err := tx.Set(s.numberDoc(p.PhoneNumberID), numberDoc{TenantID: id, WABAID: p.WABAID, UpdatedAt: now}); err != nil {
				return err
			}
		}
		if len(added) == 0 {
			return nil
		}
		return tx.Update(ref, []firestore.Update{{Path: "phone_numbers", Value: list}, {Path: "updated_at", Value: now}})
	})
	var ps tenant.Problems
	if errors.As(err, &ps) {
		return nil, ps
	}
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("add phone numbers to %s: %w", id, err)
	}
	return added, nil
}

// foreignNumbers returns tenant.Problems naming each of nums (whose phone_numbers documents are
// snaps, in order) that a tenant other than id owns; nil when none is.
func foreignNumbers(snaps []*firestore.DocumentSnapshot, nums []tenant.PhoneNumber, id string) error {
	var ps tenant.Problems
	for i, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		var n numberDoc
		if err := sn.DataTo(&n); err != nil {
			return err
		}
		if !slices.Contains(n.tenants(), id) {
			ps = append(ps, tenant.Problem{Path: "phone_numbers", Message: fmt.Sprintf("number %s belongs to another tenant", nums[i].PhoneNumberID)})
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// SetActionSecret stores tenant id's action signing secret (ciphertext from package secrets,
// purpose action_secret), replacing the previous one; ErrNotFound when there is no such tenant.
func (s *Tenants) SetActionSecret(ctx context.Context, id string, ciphertext []byte) error {
	if len(ciphertext) == 0 {
		return errors.New("set action secret: empty ciphertext")
	}
	if id == "" {
		return ErrNotFound
	}
	now := s.now()
	_, err := s.tenantDoc(id).Update(ctx, []firestore.Update{
		{Path: "action_secret", Value: ciphertext},
		{Path: "action_secret_set_at", Value: now},
		{Path: "updated_at", Value: now},
	})
	if status.Code(err) == codes.NotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("set action secret of %s: %w", id, err)
	}
	return nil
}
