package store

import (
	"context"
	"errors"
	"fmt"
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

// RuntimeMembers lists the members of tenant id who joined by invite, oldest first (the file's
// members are on the tenant itself), each with its contact's identifiers as they are now.
func (s *Tenants) RuntimeMembers(ctx context.Context, id string) ([]RuntimeMemberRecord, error) {
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
func (s *Tenants) memberRecords(ctx context.Context, id string, docs []memberDoc) ([]RuntimeMemberRecord, error) {
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
func (s *Tenants) RemoveRuntimeMember(ctx context.Context, id, who string) (tenant.Member, error) {
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
