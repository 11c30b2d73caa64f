package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/tenant"
)

// CheckPhoneNumbers returns tenant.Problems naming each of nums another tenant owns, and writes
// nothing: Embedded Signup checks before it subscribes the app, and AddPhoneNumbers checks again
// when it writes.
func (s *TenantFiles) CheckPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) error {
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
func (s *TenantFiles) AddPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) ([]string, error) {
	if id == "" {
		return nil, ErrNotFound
	}
	ref := s.tenantDoc(id)
	added, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) ([]string, error) {
		d, err := needTx[tenantDoc](tx, ref)
		if err != nil {
			return nil, err
		}
		refs := make([]*firestore.DocumentRef, 0, len(nums))
		for _, p := range nums {
			refs = append(refs, s.numberDoc(p.PhoneNumberID))
		}
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return nil, err
		}
		if err := foreignNumbers(snaps, nums, id); err != nil {
			return nil, err
		}
		now := s.now()
		list := d.PhoneNumbers
		var added []string
		for _, p := range nums {
			if d.OwnsNumber(p.PhoneNumberID) {
				continue
			}
			list = append(list, p)
			added = append(added, p.PhoneNumberID)
			if err := tx.Set(s.numberDoc(p.PhoneNumberID), numberDoc{TenantID: id, WABAID: p.WABAID, UpdatedAt: now}); err != nil {
				return nil, err
			}
		}
		if len(added) == 0 {
			return nil, nil
		}
		return added, tx.Update(ref, []firestore.Update{{Path: "phone_numbers", Value: list}, {Path: "updated_at", Value: now}})
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
	docs, err := decodeAll[numberDoc](snaps)
	if err != nil {
		return err
	}
	var ps tenant.Problems
	for i, n := range docs {
		if n != nil && !slices.Contains(n.tenants(), id) {
			ps = append(ps, tenant.Problem{Path: "phone_numbers", Message: fmt.Sprintf("number %s belongs to another tenant", nums[i].PhoneNumberID)})
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}
