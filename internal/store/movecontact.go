package store

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// InviteMovedNumber is the invite field of a member document written by MoveContact: the member
// joined under another number.
const InviteMovedNumber = "moved_number"

// MoveResult says what MoveContact moved.
type MoveResult struct {
	// Memberships are the tenants where the new number is now a member.
	Memberships []string
	// Conversations are the ids of the conversations continued under the new number.
	Conversations []string
	// FileMembers are the tenants whose file still lists the old number: the operator should
	// change the file (the new number is a member meanwhile, by a member document).
	FileMembers []string
}

// MoveContact follows a contact who changed number (a system message user_changed_number) from
// oldWaID to newWaID:
//
//   - in every tenant where oldWaID is a member (by invite, or listed in the file), newWaID
//     becomes a member with the same role, name and language; an invite member document moves,
//     a file member gets a member document for the new number, as the file is the operator's;
//   - every open conversation of oldWaID continues in the conversation of newWaID on the same
//     tenant and number, with its state (turns, pending action) and assignment; the old one is
//     closed with moved_to naming the new one. A conversation the new number already has is
//     left as it is;
//   - the contact's marketing preferences follow.
//
// Doing it again changes nothing more, so a redelivered notice is harmless. A new number that
// is already a member somewhere keeps its own membership there.
func (s *Tenants) MoveContact(ctx context.Context, oldWaID, newWaID string) (MoveResult, error) {
	var res MoveResult
	if oldWaID == "" || newWaID == "" || oldWaID == newWaID || strings.Contains(oldWaID, "/") || strings.Contains(newWaID, "/") {
		return res, fmt.Errorf("move contact: %w", errNoContact)
	}
	tenants, err := s.List(ctx)
	if err != nil {
		return res, fmt.Errorf("move contact: %w", err)
	}
	prefs := &ContactPrefs{fs: s.fs, now: s.now}
	for _, rec := range tenants {
		id := rec.Tenant.ID
		moved, err := s.moveMember(ctx, rec, oldWaID, newWaID)
		if err != nil {
			return res, fmt.Errorf("move contact: membership in %s: %w", id, err)
		}
		if moved {
			res.Memberships = append(res.Memberships, id)
		}
		if _, ok := rec.Tenant.Member(oldWaID); ok {
			res.FileMembers = append(res.FileMembers, id)
		}
		if err := prefs.move(ctx, id, oldWaID, newWaID); err != nil {
			return res, fmt.Errorf("move contact: preferences in %s: %w", id, err)
		}
	}
	res.Conversations, err = s.moveConversations(ctx, oldWaID, newWaID)
	if err != nil {
		return res, fmt.Errorf("move contact: %w", err)
	}
	return res, nil
}

// moveMember makes newWaID a member of the tenant when oldWaID is one, in one transaction. It
// reports whether newWaID is a member by a member document now.
func (s *Tenants) moveMember(ctx context.Context, rec TenantRecord, oldWaID, newWaID string) (bool, error) {
	members := s.tenantDoc(rec.Tenant.ID).Collection(TenantMembers)
	oldRef, newRef := members.Doc(oldWaID), members.Doc(newWaID)
	moved := false
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		moved = false
		snaps, err := tx.GetAll([]*firestore.DocumentRef{oldRef, newRef})
		if err != nil {
			return err
		}
		var doc memberDoc
		switch fm, inFile := rec.Tenant.Member(oldWaID); {
		case snaps[0].Exists():
			if err := snaps[0].DataTo(&doc); err != nil {
				return err
			}
			if err := tx.Delete(oldRef); err != nil {
				return err
			}
		case inFile:
			doc = memberDoc{Role: fm.Role, Name: fm.Name, Language: fm.Language, JoinedAt: s.now(), Invite: InviteMovedNumber}
		default:
			return nil // not a member, or moved already
		}
		moved = true
		if snaps[1].Exists() {
			return nil // the new number's own membership stands
		}
		if _, inFile := rec.Tenant.Member(newWaID); inFile {
			return nil
		}
		doc.WaID = newWaID
		return tx.Create(newRef, doc)
	}, firestore.MaxAttempts(maxTxAttempts))
	return moved, err
}

// moveConversations continues each open conversation of oldWaID under newWaID.
func (s *Tenants) moveConversations(ctx context.Context, oldWaID, newWaID string) ([]string, error) {
	snaps, err := s.fs.Collection(Conversations).Where("contact", "==", oldWaID).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query conversations: %w", err)
	}
	var moved []string
	for _, sn := range snaps {
		id, err := s.moveConversation(ctx, sn.Ref, newWaID)
		if err != nil {
			return moved, fmt.Errorf("conversation %s: %w", sn.Ref.ID, err)
		}
		if id != "" {
			moved = append(moved, id)
		}
	}
	return moved, nil
}

// moveConversation copies the open conversation at ref to newWaID's and closes it; it returns
// the new conversation's id, empty when there was nothing to move.
func (s *Tenants) moveConversation(ctx context.Context, ref *firestore.DocumentRef, newWaID string) (string, error) {
	newID := ""
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		newID = ""
		snap, err := tx.Get(ref)
		if err != nil {
			return err
		}
		var conv Conversation
		if err := snap.DataTo(&conv); err != nil {
			return err
		}
		if conv.Status != ConversationOpen || conv.MovedTo != "" {
			return nil
		}
		id := ConversationID(conv.TenantID, conv.PhoneNumberID, newWaID)
		newRef := s.fs.Collection(Conversations).Doc(id)
		_, err = tx.Get(newRef)
		switch {
		case status.Code(err) == codes.NotFound:
			now := s.now()
			next := conv
			next.ID, next.Contact, next.MovedFrom, next.Lease = id, newWaID, conv.ID, Lease{}
			next.CreatedAt, next.UpdatedAt = now, now
			if err := tx.Create(newRef, next); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		newID = id
		return tx.Update(ref, []firestore.Update{{Path: "moved_to", Value: id}, {Path: "status", Value: ConversationClosed}})
	}, firestore.MaxAttempts(maxTxAttempts))
	return newID, err
}

// move copies the contact's preference for tenantID to the new number, unless it has its own.
func (s *ContactPrefs) move(ctx context.Context, tenantID, oldWaID, newWaID string) error {
	p, err := s.Preference(ctx, tenantID, oldWaID)
	if err != nil || p.Contact == "" {
		return err
	}
	p.Contact = newWaID
	_, err = s.prefDoc(tenantID, newWaID).Create(ctx, p)
	if status.Code(err) == codes.AlreadyExists {
		return nil
	}
	return err
}
