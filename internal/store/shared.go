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

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/tenant"
)

// NumberContacts, under a shared number's phone_numbers document, holds the tenant a contact
// chose on that number with an invite code, once under each of the person's identifiers
// (keyed: choiceRefs). It overrides the tenants' files on that
// number: a file member of tenant A who redeems tenant B's code is B's on the number from then
// on, and the next apply of A's file does not bring it back. Only a code (of A, or another
// tenant's) moves it again.
const NumberContacts = "contacts"

// contactDoc is a NumberContacts document.
type contactDoc struct {
	TenantID string    `firestore:"tenant_id"`
	JoinedAt time.Time `firestore:"joined_at"`
	// Invite is the hash of the code redeemed.
	Invite string `firestore:"invite"`
}

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
	return tenant.NumberUse{TenantIDs: n.tenants(), Shared: n.Shared, WABAID: n.WABAID}
}

// numberFor is the index document of a number listed by ids (sorted, at least one): a shared
// number lists them all and names the first as tenant_id, so every reader of tenant_id (routing
// by number, the number's language) sees one tenant.
func numberFor(ids []string, wabaID string, shared bool, now time.Time) numberDoc {
	if !shared {
		return numberDoc{TenantID: ids[0], WABAID: wabaID, UpdatedAt: now}
	}
	return numberDoc{TenantID: ids[0], WABAID: wabaID, Shared: true, TenantIDs: ids, UpdatedAt: now}
}

// sameNumber reports whether two index documents say the same (updated_at aside).
func sameNumber(a, b numberDoc) bool {
	return a.TenantID == b.TenantID && a.WABAID == b.WABAID && a.Shared == b.Shared && slices.Equal(a.TenantIDs, b.TenantIDs)
}

// ownedNumbers reads, in tx, the index documents of the numbers tenant id lists: those it owns
// alone (tenant_id) and the shared ones that list it (tenant_ids), once each.
func (s *Tenants) ownedNumbers(tx *firestore.Transaction, id string) ([]*firestore.DocumentSnapshot, error) {
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
		if p.Shared && ok && cur.Shared {
			ids = append(without(cur.tenants(), t.ID), t.ID)
			slices.Sort(ids)
		}
		want := numberFor(ids, p.WABAID, p.Shared, time.Time{})
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
			plan.sets = append(plan.sets, numberWrite{number: sn.Ref.ID, doc: numberFor(rest, n.WABAID, true, time.Time{})})
			continue
		}
		plan.deletes = append(plan.deletes, sn.Ref)
	}
	return plan, nil
}

// writeNumberIndex applies plan to the phone_numbers index.
func (s *Tenants) writeNumberIndex(tx *firestore.Transaction, plan numberIndexPlan, now time.Time) error {
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

// NumberUse returns the tenants that list phoneNumberID, sorted, and whether they share it;
// ErrNotFound when no tenant does.
func (s *Tenants) NumberUse(ctx context.Context, phoneNumberID string) (tenant.NumberUse, error) {
	if phoneNumberID == "" || strings.Contains(phoneNumberID, "/") {
		return tenant.NumberUse{}, ErrNotFound
	}
	n, err := getDoc[numberDoc](ctx, s.numberDoc(phoneNumberID), "phone number")
	if err != nil {
		return tenant.NumberUse{}, err
	}
	return n.use(), nil
}

// SharedContact is what the store knows of a contact on a shared number.
type SharedContact struct {
	// Chosen is the tenant the contact last chose on the number with an invite code; "" when
	// none.
	Chosen string
	// Joined are the tenants (of those asked) the contact joined by invite, in the order asked.
	Joined []string
	// Contacts are the person's contacts in the tenants asked that know them.
	Contacts map[string]Contact
}

// choiceRefs are the documents that record person's choice on the shared number phoneNumberID:
// one per identifier, keyed, so that either finds it; then, until the migration has run, the
// one named after the phone before contacts.
func (s *Tenants) choiceRefs(ctx context.Context, phoneNumberID string, person contact.Identity) []*firestore.DocumentRef {
	col := s.numberDoc(phoneNumberID).Collection(NumberContacts)
	var refs []*firestore.DocumentRef
	for _, k := range person.Keys() {
		refs = append(refs, col.Doc(s.db.keyer.ID("number-contact", phoneNumberID, string(k.Kind), k.Value)))
	}
	if person.WaID != "" && !strings.Contains(person.WaID, "/") && s.db.legacyReads(ctx) {
		refs = append(refs, col.Doc(person.WaID))
	}
	return refs
}

// SharedContact reads person's choice on the shared number phoneNumberID and their memberships
// by invite in tenantIDs (the number's tenants). The file members are on the tenants
// themselves. Three reads, each of several documents at once.
func (s *Tenants) SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, person contact.Identity) (SharedContact, error) {
	if phoneNumberID == "" || person.IsZero() || strings.Contains(phoneNumberID, "/") {
		return SharedContact{}, nil
	}
	cs, err := s.contacts().FindIn(ctx, tenantIDs, person)
	if err != nil {
		return SharedContact{}, fmt.Errorf("read the contact on shared number %s: %w", phoneNumberID, err)
	}
	refs := s.choiceRefs(ctx, phoneNumberID, person)
	nChoice := len(refs)
	var owners []string
	for _, id := range tenantIDs {
		c, ok := cs[id]
		if !ok {
			if person.WaID == "" || !s.db.legacyReads(ctx) {
				continue
			}
			c = Contact{Identity: contact.Identity{WaID: person.WaID}}
		}
		for _, ref := range s.memberRefs(ctx, id, c) {
			refs = append(refs, ref)
			owners = append(owners, id)
		}
	}
	snaps, err := s.fs.GetAll(ctx, refs)
	if err != nil {
		return SharedContact{}, fmt.Errorf("read the contact on shared number %s: %w", phoneNumberID, err)
	}
	sc := SharedContact{Contacts: cs}
	var latest time.Time
	for _, sn := range snaps[:nChoice] {
		if !sn.Exists() {
			continue
		}
		var c contactDoc
		if err := sn.DataTo(&c); err != nil {
			return SharedContact{}, fmt.Errorf("decode shared number contact: %w", err)
		}
		if sc.Chosen == "" || c.JoinedAt.After(latest) {
			sc.Chosen, latest = c.TenantID, c.JoinedAt
		}
	}
	for i, sn := range snaps[nChoice:] {
		if sn.Exists() && !slices.Contains(sc.Joined, owners[i]) {
			sc.Joined = append(sc.Joined, owners[i])
		}
	}
	return sc, nil
}

// InviteTenant returns the tenant of tenantIDs whose invite codeHash the person may redeem
// (unused and unexpired) or has redeemed (a retry of the turn that redeemed it must reach the
// same tenant); "" when there is none. Two reads.
func (s *Tenants) InviteTenant(ctx context.Context, tenantIDs []string, codeHash string, person contact.Identity) (string, error) {
	if len(tenantIDs) == 0 || codeHash == "" || strings.Contains(codeHash, "/") {
		return "", nil
	}
	refs := make([]*firestore.DocumentRef, 0, len(tenantIDs))
	for _, id := range tenantIDs {
		refs = append(refs, s.tenantDoc(id).Collection(TenantInvites).Doc(codeHash))
	}
	snaps, err := s.fs.GetAll(ctx, refs)
	if err != nil {
		return "", fmt.Errorf("read invites: %w", err)
	}
	now := s.now()
	var used []int
	for i, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		var d inviteDoc
		if err := sn.DataTo(&d); err != nil {
			return "", fmt.Errorf("decode invite: %w", err)
		}
		if d.UsedAt.IsZero() && now.Before(d.ExpireAt) {
			return tenantIDs[i], nil
		}
		if !d.UsedAt.IsZero() && d.UsedBy != "" {
			used = append(used, i)
		}
	}
	if len(used) == 0 {
		return "", nil
	}
	// A code used already is this person's when they are who used it: their contact there.
	ids := make([]string, len(used))
	for j, i := range used {
		ids[j] = tenantIDs[i]
	}
	cs, err := s.contacts().FindIn(ctx, ids, person)
	if err != nil {
		return "", err
	}
	for _, i := range used {
		var d inviteDoc
		if err := snaps[i].DataTo(&d); err != nil {
			return "", fmt.Errorf("decode invite: %w", err)
		}
		c, ok := cs[tenantIDs[i]]
		if (ok && d.UsedBy == c.ID) || (person.WaID != "" && d.UsedBy == person.WaID) {
			return tenantIDs[i], nil
		}
	}
	return "", nil
}

// RedeemSharedInvite is RedeemInvite for a contact writing on phoneNumberID: when the number is
// shared and tenant id lists it, the person also leaves the number's other tenants in the same
// transaction (their memberships by invite there are deleted, and the choice recorded under the
// number overrides their files' members there).
func (s *Tenants) RedeemSharedInvite(ctx context.Context, id, phoneNumberID, codeHash string, c Contact, name string) (tenant.Member, error) {
	if strings.Contains(phoneNumberID, "/") {
		return tenant.Member{}, ErrInviteInvalid
	}
	return s.redeemInvite(ctx, id, phoneNumberID, codeHash, c, name)
}

// redeemInvite uses the invite with codeHash to tenant id, in one transaction: the invite must
// exist under this tenant, be unused and unexpired; it is marked used by contact c, and c
// becomes a member (tenants/{id}/members/{c.ID}) with the invite's role and name. On a shared
// number (phoneNumberID not "") the person leaves the number's other tenants. ErrInviteInvalid
// otherwise.
func (s *Tenants) redeemInvite(ctx context.Context, id, phoneNumberID, codeHash string, c Contact, name string) (tenant.Member, error) {
	if id == "" || codeHash == "" || c.ID == "" || strings.Contains(codeHash, "/") || strings.Contains(c.ID, "/") {
		return tenant.Member{}, ErrInviteInvalid
	}
	inv := s.tenantDoc(id).Collection(TenantInvites).Doc(codeHash)
	mem := s.tenantDoc(id).Collection(TenantMembers).Doc(c.ID)
	// The person's contacts in the number's other tenants, read first: the transaction deletes
	// their memberships there.
	var elsewhere map[string]Contact
	if phoneNumberID != "" {
		use, err := s.NumberUse(ctx, phoneNumberID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return tenant.Member{}, fmt.Errorf("redeem invite to %s: %w", id, err)
		}
		if elsewhere, err = s.contacts().FindIn(ctx, without(use.TenantIDs, id), c.Identity); err != nil {
			return tenant.Member{}, fmt.Errorf("redeem invite to %s: %w", id, err)
		}
	}
	choices := s.choiceRefs(ctx, phoneNumberID, c.Identity)
	m, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (tenant.Member, error) {
		now := s.now()
		snap, err := tx.Get(inv)
		if status.Code(err) == codes.NotFound {
			return tenant.Member{}, ErrInviteInvalid
		}
		if err != nil {
			return tenant.Member{}, err
		}
		var d inviteDoc
		if err := snap.DataTo(&d); err != nil {
			return tenant.Member{}, err
		}
		if !d.UsedAt.IsZero() || !now.Before(d.ExpireAt) {
			return tenant.Member{}, ErrInviteInvalid
		}
		others, err := s.sharedWith(tx, phoneNumberID, id)
		if err != nil {
			return tenant.Member{}, err
		}
		m := tenant.Member{WaID: c.WaID, UserID: c.UserID, Role: d.Role, Name: name}
		if err := tx.Update(inv, []firestore.Update{{Path: "used_at", Value: now}, {Path: "used_by", Value: c.ID}}); err != nil {
			return tenant.Member{}, err
		}
		doc := memberDoc{ContactID: c.ID, WaID: c.WaID, UserID: c.UserID, Role: d.Role, Name: name, JoinedAt: now, Invite: codeHash}
		if err := tx.Set(mem, doc); err != nil {
			return tenant.Member{}, err
		}
		if others == nil {
			return m, nil
		}
		for _, o := range others {
			oc, ok := elsewhere[o]
			if !ok {
				oc = Contact{Identity: contact.Identity{WaID: c.WaID}}
			}
			for _, ref := range s.memberRefs(ctx, o, oc) {
				if err := tx.Delete(ref); err != nil {
					return tenant.Member{}, err
				}
			}
		}
		for _, ref := range choices {
			if err := tx.Set(ref, contactDoc{TenantID: id, JoinedAt: now, Invite: codeHash}); err != nil {
				return tenant.Member{}, err
			}
		}
		return m, nil
	})
	if errors.Is(err, ErrInviteInvalid) {
		return tenant.Member{}, ErrInviteInvalid
	}
	if err != nil {
		return tenant.Member{}, fmt.Errorf("redeem invite to %s: %w", id, err)
	}
	return m, nil
}

// sharedWith reads, in tx, the other tenants of phoneNumberID when it is a shared number that
// tenant id lists (an empty, non-nil slice when id is alone on it); nil when it is not shared,
// not id's, or phoneNumberID is "".
func (s *Tenants) sharedWith(tx *firestore.Transaction, phoneNumberID, id string) ([]string, error) {
	if phoneNumberID == "" {
		return nil, nil
	}
	snap, err := tx.Get(s.numberDoc(phoneNumberID))
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read phone number: %w", err)
	}
	var n numberDoc
	if err := snap.DataTo(&n); err != nil {
		return nil, fmt.Errorf("decode phone number: %w", err)
	}
	if !n.Shared || !slices.Contains(n.tenants(), id) {
		return nil, nil
	}
	return append([]string{}, without(n.tenants(), id)...), nil
}
