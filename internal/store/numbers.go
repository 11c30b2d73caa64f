package store

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/tenant"
)

// The phone_numbers index, which routes each number to the tenants that list it: what an apply
// or a deletion of a tenant writes there.

// tenants returns the tenants that list the number: TenantIDs of a shared number, else its one
// owner.
func (n numberDoc) tenants() []string {
	if len(n.TenantIDs) > 0 {
		return n.TenantIDs
	}
	if n.TenantID != "" {
		return []string{n.TenantID}
	}
	return nil
}

func (n numberDoc) use() tenant.NumberUse {
	return tenant.NumberUse{TenantIDs: n.tenants(), Shared: n.Shared, WABAID: n.WABAID, Primary: n.Primary}
}

// numberFor is the index document of a number listed by ids (sorted, at least one): a shared
// number lists them all and names its primary (one of ids, else none) as tenant_id, so every
// reader of tenant_id (routing by number, the number's language) sees the tenant strangers go
// to; without one (a number shared before primary existed) the first.
func numberFor(ids []string, wabaID string, shared bool, primary string) numberDoc {
	if !shared {
		return numberDoc{TenantID: ids[0], WABAID: wabaID}
	}
	if !slices.Contains(ids, primary) {
		primary = ""
	}
	return numberDoc{TenantID: cmp.Or(primary, ids[0]), WABAID: wabaID, Shared: true, TenantIDs: ids, Primary: primary}
}

// sameNumber reports whether two index documents say the same (updated_at aside).
func sameNumber(a, b numberDoc) bool {
	return a.TenantID == b.TenantID && a.WABAID == b.WABAID && a.Shared == b.Shared && slices.Equal(a.TenantIDs, b.TenantIDs) &&
		a.Primary == b.Primary
}

// ownedNumbers reads, in tx, the index documents of the numbers tenant id lists: those it owns
// alone (tenant_id) and the shared ones that list it (tenant_ids), once each.
func (s *TenantFiles) ownedNumbers(tx *firestore.Transaction, id string) ([]*firestore.DocumentSnapshot, error) {
	col := s.fs.Collection(PhoneNumbers)
	alone, err := tx.Documents(col.Where("tenant_id", "==", id)).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query phone numbers: %w", err)
	}
	shared, err := tx.Documents(col.Where("tenant_ids", "array-contains", id)).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query shared phone numbers: %w", err)
	}
	out := alone
	for _, sn := range shared {
		if !slices.ContainsFunc(out, func(o *firestore.DocumentSnapshot) bool { return o.Ref.ID == sn.Ref.ID }) {
			out = append(out, sn)
		}
	}
	return out, nil
}

// numberIndexPlan is the phone_numbers index writes of an apply.
type numberIndexPlan struct {
	sets    []numberWrite
	deletes []*firestore.DocumentRef
}

// numberWrite is one index document to write: its number and what it says (updated_at is set
// when written).
type numberWrite struct {
	number string
	doc    numberDoc
}

// planNumberIndex finds the index writes of applying t: a listed number whose document is
// missing or says otherwise (t joining or leaving a shared number's tenants, sharing or
// un-sharing it, another waba_id), and a number t no longer lists (deleted when t was its only
// tenant, else t leaves its tenants). current has passed tenant.CheckNumbers. After a normal
// apply there are none.
func planNumberIndex(t *tenant.Tenant, current map[string]numberDoc, owned []*firestore.DocumentSnapshot) (numberIndexPlan, error) {
	var plan numberIndexPlan
	for _, p := range t.PhoneNumbers {
		cur, ok := current[p.PhoneNumberID]
		ids := []string{t.ID}
		primary := ""
		if p.Shared && ok && cur.Shared {
			ids = append(without(cur.tenants(), t.ID), t.ID)
			slices.Sort(ids)
			if cur.Primary != t.ID {
				primary = cur.Primary
			}
		}
		if p.Primary {
			primary = t.ID
		}
		want := numberFor(ids, p.WABAID, p.Shared, primary)
		if !ok || !sameNumber(cur, want) {
			plan.sets = append(plan.sets, numberWrite{number: p.PhoneNumberID, doc: want})
		}
	}
	for _, sn := range owned {
		if t.OwnsNumber(sn.Ref.ID) {
			continue
		}
		var n numberDoc
		if err := sn.DataTo(&n); err != nil {
			return numberIndexPlan{}, fmt.Errorf("decode phone number: %w", err)
		}
		if rest := without(n.tenants(), t.ID); len(rest) > 0 && n.Shared {
			plan.sets = append(plan.sets, numberWrite{number: sn.Ref.ID, doc: numberFor(rest, n.WABAID, true, n.Primary)})
			continue
		}
		plan.deletes = append(plan.deletes, sn.Ref)
	}
	return plan, nil
}

// writeNumberIndex applies plan to the phone_numbers index.
func (s *TenantFiles) writeNumberIndex(tx *firestore.Transaction, plan numberIndexPlan, now time.Time) error {
	for _, w := range plan.sets {
		w.doc.UpdatedAt = now
		if err := tx.Set(s.numberDoc(w.number), w.doc); err != nil {
			return fmt.Errorf("write phone number: %w", err)
		}
	}
	for _, d := range plan.deletes {
		if err := tx.Delete(d); err != nil {
			return fmt.Errorf("delete phone number: %w", err)
		}
	}
	return nil
}

// without returns ids without id, as a new slice.
func without(ids []string, id string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(x string) bool { return x == id })
}
