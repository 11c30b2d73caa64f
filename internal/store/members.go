package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/tenant"
)

// RuntimeMemberRecord is a member who joined a tenant by invite, and when.
type RuntimeMemberRecord struct {
	// Member has the contact's identifiers as they are now (a member who changed number is
	// reached at the new one).
	Member tenant.Member
	// ContactID is the member's contact (ct_…); empty for a document from before contacts.
	ContactID string
	JoinedAt  time.Time
}

// member is the tenant.Member of a members document.
func (d memberDoc) member() tenant.Member {
	return tenant.Member{WaID: d.WaID, UserID: d.UserID, Role: d.Role, Name: d.Name, Language: d.Language}
}

// Memberships keeps the members of each tenant who joined by invite (tenants/{id}/members), the
// file members suspended after a change of number, and what a merged contact's membership
// becomes.
type Memberships struct{ tenantBase }

// RuntimeMembers lists the members of tenant id who joined by invite, oldest first (the file's
// members are on the tenant itself), each with its contact's identifiers as they are now.
func (s *Memberships) RuntimeMembers(ctx context.Context, id string) ([]RuntimeMemberRecord, error) {
	if id == "" {
		return nil, nil
	}
	docs, err := queryAll[memberDoc](ctx, s.tenantDoc(id).Collection(TenantMembers).Query, "members of "+id)
	if err != nil {
		return nil, err
	}
	out, err := s.memberRecords(ctx, id, docs)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].JoinedAt.Before(out[j].JoinedAt) })
	return out, nil
}

// memberRecords turns member documents into records with their contacts' identifiers as they
// are now: one read of every contact at once.
func (s *Memberships) memberRecords(ctx context.Context, id string, docs []memberDoc) ([]RuntimeMemberRecord, error) {
	cs := s.contacts()
	var refs []*firestore.DocumentRef
	for _, d := range docs {
		if d.ContactID != "" {
			refs = append(refs, cs.contactDoc(id, d.ContactID))
		}
	}
	live, err := cs.readLive(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read the members' contacts: %w", err)
	}
	byID := map[string]Contact{}
	for _, c := range live {
		byID[c.ID] = c
	}
	out := make([]RuntimeMemberRecord, 0, len(docs))
	for _, d := range docs {
		m := d.member()
		if c, ok := byID[d.ContactID]; ok {
			m.WaID, m.UserID = c.WaID, c.UserID
		}
		out = append(out, RuntimeMemberRecord{Member: m, ContactID: d.ContactID, JoinedAt: d.JoinedAt})
	}
	return out, nil
}

// RemoveRuntimeMember removes the person who (a phone number, a BSUID or a contact id) from the
// members of tenant id who joined by invite and returns the member removed: from the next
// message the contact is a stranger again (with audience members, the onboarding prompt).
// ErrNotFound when no such member joined by invite.
func (s *Memberships) RemoveRuntimeMember(ctx context.Context, id, who string) (tenant.Member, error) {
	if id == "" || who == "" || strings.Contains(who, "/") {
		return tenant.Member{}, ErrNotFound
	}
	c := Contact{ID: who}
	if !strings.HasPrefix(who, ContactIDPrefix) {
		person := contact.Identity{WaID: who}
		if !contact.IsPhone(who) {
			person = contact.Identity{UserID: who}
		}
		found, ok, err := s.contacts().Find(ctx, id, person)
		if err != nil {
			return tenant.Member{}, err
		}
		c = found
		if !ok {
			// Before contacts a member document was named after the phone.
			c = Contact{ID: who, Identity: person}
		}
	}
	for _, ref := range s.memberRefs(ctx, id, c) {
		d, err := getDoc[memberDoc](ctx, ref, "member")
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return tenant.Member{}, err
		}
		// Exists: a removal that lost to another one is not found, like a second removal.
		if _, err := ref.Delete(ctx, firestore.Exists); status.Code(err) == codes.NotFound {
			return tenant.Member{}, ErrNotFound
		} else if err != nil {
			return tenant.Member{}, fmt.Errorf("remove member of %s: %w", id, err)
		}
		m := d.member()
		if c.WaID != "" || c.UserID != "" {
			m.WaID, m.UserID = c.WaID, c.UserID
		}
		return m, nil
	}
	return tenant.Member{}, ErrNotFound
}

// memberRefs are the member documents of contact c in tenant id: its own, then, until the
// migration has run, the one named after its phone before contacts.
func (s tenantBase) memberRefs(ctx context.Context, id string, c Contact) []*firestore.DocumentRef {
	members := s.tenantDoc(id).Collection(TenantMembers)
	var refs []*firestore.DocumentRef
	if c.ID != "" && !strings.Contains(c.ID, "/") {
		refs = append(refs, members.Doc(c.ID))
	}
	if c.WaID != "" && !strings.Contains(c.WaID, "/") && s.db.legacyReads(ctx) {
		refs = append(refs, members.Doc(c.WaID))
	}
	return refs
}

// RuntimeMember returns contact c's membership of tenant id by invite, and whether there is
// one. The file's members are on the tenant itself (tenant.Tenant.MemberOf); look there first.
// One read.
func (s *Memberships) RuntimeMember(ctx context.Context, id string, c Contact) (tenant.Member, bool, error) {
	if id == "" || c.ID == "" || strings.Contains(c.ID, "/") {
		return tenant.Member{}, false, nil
	}
	snaps, err := s.fs.GetAll(ctx, s.memberRefs(ctx, id, c))
	if err != nil {
		return tenant.Member{}, false, fmt.Errorf("read member: %w", err)
	}
	d, ok, err := firstExisting[memberDoc](snaps)
	if err != nil {
		return tenant.Member{}, false, fmt.Errorf("decode member: %w", err)
	}
	if !ok {
		return tenant.Member{}, false, nil
	}
	m := d.member()
	m.WaID, m.UserID = c.WaID, c.UserID
	return m, true, nil
}

// GrantMember makes contact c a member of tenant id with m's role, name and language, by a
// member document marked invite (InviteMovedNumber: a file role kept after a change of number),
// unless c has a membership document already. It reports whether it wrote one. One transaction.
func (s *Memberships) GrantMember(ctx context.Context, id string, c Contact, m tenant.Member, invite string) (bool, error) {
	if id == "" || c.ID == "" || strings.Contains(c.ID, "/") {
		return false, fmt.Errorf("grant member: %w", errNoContact)
	}
	ref := s.tenantDoc(id).Collection(TenantMembers).Doc(c.ID)
	granted, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		if exists, err := existsTx(tx, ref); err != nil || exists {
			return false, err
		}
		return true, tx.Create(ref, memberDoc{ContactID: c.ID, WaID: c.WaID, UserID: c.UserID, Role: m.Role, Name: m.Name,
			Language: m.Language, JoinedAt: s.now(), Invite: invite})
	})
	if err != nil {
		return false, fmt.Errorf("grant member of %s: %w", id, err)
	}
	return granted, nil
}

// SuspendFileMember suspends the file's member listed by phone in tenant id (TenantRecord
// Suspended): its owner changed number, and the number may be given to someone else. It
// reports whether the file lists the phone and it was not suspended yet. The next apply that
// no longer lists the phone lifts the suspension.
func (s *Memberships) SuspendFileMember(ctx context.Context, id, phone string) (bool, error) {
	if id == "" || phone == "" {
		return false, nil
	}
	ref := s.tenantDoc(id)
	suspended, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		d, err := readTenantDoc(tx, ref)
		if err != nil || d == nil {
			return false, err
		}
		listed := slices.ContainsFunc(d.Tenant.Members, func(m tenant.Member) bool { return m.WaID == phone })
		if !listed || slices.Contains(d.SuspendedPhones, phone) {
			return false, nil
		}
		return true, tx.Update(ref, []firestore.Update{
			{Path: "suspended_phones", Value: firestore.ArrayUnion(phone)}, {Path: "updated_at", Value: s.now()},
		})
	})
	if err != nil {
		return false, fmt.Errorf("suspend a file member of %s: %w", id, err)
	}
	return suspended, nil
}
