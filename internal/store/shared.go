package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

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

// Invites keeps the tenants' one-time invite codes (tenants/{id}/invites) and what their
// redemption decides on a shared number: the tenant a contact chose there (NumberContacts), which
// overrides the files of the number's other tenants.
type Invites struct{ tenantBase }

// CreateInvite stores a one-time invite to tenant id with role, valid until expireAt, under the
// hash of its code (tenant.InviteCodeHash); ErrNotFound when there is no such tenant.
func (s *Invites) CreateInvite(ctx context.Context, id, codeHash string, role tenant.Role, expireAt time.Time) error {
	if id == "" {
		return ErrNotFound
	}
	if codeHash == "" || !slices.Contains([]tenant.Role{tenant.RoleOwner, tenant.RoleAdmin, tenant.RoleMember}, role) {
		return fmt.Errorf("create invite: bad code hash or role %q", role)
	}
	ref := s.tenantDoc(id)
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := requireTx(tx, ref); err != nil {
			return err
		}
		return tx.Create(ref.Collection(TenantInvites).Doc(codeHash), inviteDoc{Role: role, CreatedAt: s.now(), ExpireAt: expireAt})
	})
	if errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create invite to %s: %w", id, err)
	}
	return nil
}

// RedeemInvite uses the invite with codeHash to tenant id, in one transaction: the invite must
// exist under this tenant, be unused and unexpired; it is marked used by contact c, and c
// becomes a member (tenants/{id}/members/{c.ID}) with the invite's role and name.
// ErrInviteInvalid otherwise.
func (s *Invites) RedeemInvite(ctx context.Context, id, codeHash string, c Contact, name string) (tenant.Member, error) {
	return s.redeemInvite(ctx, id, "", codeHash, c, name)
}

// NumberUse returns the tenants that list phoneNumberID, sorted, and whether they share it;
// ErrNotFound when no tenant does.
func (s *Invites) NumberUse(ctx context.Context, phoneNumberID string) (tenant.NumberUse, error) {
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
func (s *Invites) choiceRefs(ctx context.Context, phoneNumberID string, person contact.Identity) []*firestore.DocumentRef {
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
func (s *Invites) SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, person contact.Identity) (SharedContact, error) {
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
	choices, err := decodeAll[contactDoc](snaps[:nChoice])
	if err != nil {
		return SharedContact{}, fmt.Errorf("decode shared number contact: %w", err)
	}
	sc := SharedContact{Contacts: cs}
	var latest time.Time
	for _, c := range choices {
		if c == nil {
			continue
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
func (s *Invites) InviteTenant(ctx context.Context, tenantIDs []string, codeHash string, person contact.Identity) (string, error) {
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
	// Each invite decoded once, into its own value: the used ones are looked at again below.
	invites := make([]inviteDoc, len(snaps))
	for i, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		d := &invites[i]
		if err := sn.DataTo(d); err != nil {
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
		d := invites[i]
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
func (s *Invites) RedeemSharedInvite(ctx context.Context, id, phoneNumberID, codeHash string, c Contact, name string) (tenant.Member, error) {
	if strings.Contains(phoneNumberID, "/") {
		return tenant.Member{}, ErrInviteInvalid
	}
	return s.redeemInvite(ctx, id, phoneNumberID, codeHash, c, name)
}

// redeemInvite uses the invite with codeHash to tenant id, in one transaction: the invite must
// exist under this tenant, be unused and unexpired; it is marked used by contact c, and c
// becomes a member (tenants/{id}/members/{c.ID}) with the invite's role and name. On a shared
// number (phoneNumberID not "") the contact's choice of tenant id is recorded under the number,
// where it routes; the contact stays a member of the number's other tenants, which it may be on
// their other numbers too (a code evicts no one). ErrInviteInvalid otherwise.
func (s *Invites) redeemInvite(ctx context.Context, id, phoneNumberID, codeHash string, c Contact, name string) (tenant.Member, error) {
	if id == "" || codeHash == "" || c.ID == "" || strings.Contains(codeHash, "/") || strings.Contains(c.ID, "/") {
		return tenant.Member{}, ErrInviteInvalid
	}
	inv := s.tenantDoc(id).Collection(TenantInvites).Doc(codeHash)
	mem := s.tenantDoc(id).Collection(TenantMembers).Doc(c.ID)
	choices := s.choiceRefs(ctx, phoneNumberID, c.Identity)
	m, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (tenant.Member, error) {
		now := s.now()
		d, ok, err := getTx[inviteDoc](tx, inv)
		if err != nil {
			return tenant.Member{}, err
		}
		if !ok || !d.UsedAt.IsZero() || !now.Before(d.ExpireAt) {
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
func (s *Invites) sharedWith(tx *firestore.Transaction, phoneNumberID, id string) ([]string, error) {
	if phoneNumberID == "" {
		return nil, nil
	}
	n, ok, err := getTx[numberDoc](tx, s.numberDoc(phoneNumberID))
	if err != nil {
		return nil, fmt.Errorf("read phone number: %w", err)
	}
	if !ok || !n.Shared || !slices.Contains(n.tenants(), id) {
		return nil, nil
	}
	return append([]string{}, without(n.tenants(), id)...), nil
}
