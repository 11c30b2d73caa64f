package store

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"
)

// InviteMovedNumber is the invite field of a member document that did not come from a code: the
// membership of a person listed in the tenant file by a phone they no longer have
// (GrantMember), or of a contact merged into another (Absorb).
const InviteMovedNumber = "moved_number"

// AbsorbResult says what Absorb carried over.
type AbsorbResult struct {
	// Conversations are the ids of the conversations that continue under the survivor.
	Conversations []string
	// Membership: the survivor is a member by the absorbed contact's member document.
	Membership bool
}

// Absorb carries what contact from had in tenantID over to contact into, after Contacts merged
// from into into (Resolution.Absorbed, IdentityMove.Absorbed): each open conversation of from
// continues in into's conversation on the same number, with its state (turns, pending action)
// and assignment, unless into has one there already (the old one is closed, moved_to naming the
// new one); from's membership by invite becomes into's unless into has its own; so does its
// marketing preference. Running it again changes nothing more. Sender windows and quota shares
// are not carried: the first are minutes long, and the second count at most one month twice.
func (s *Memberships) Absorb(ctx context.Context, tenantID string, from, into Contact) (AbsorbResult, error) {
	var res AbsorbResult
	if tenantID == "" || from.ID == "" || into.ID == "" || from.ID == into.ID {
		return res, fmt.Errorf("absorb contact: %w", errNoContact)
	}
	snaps, err := s.fs.Collection(Conversations).Where("contact_id", "==", from.ID).Documents(ctx).GetAll()
	if err != nil {
		return res, fmt.Errorf("absorb contact: query conversations: %w", err)
	}
	for _, sn := range snaps {
		id, err := s.continueConversation(ctx, sn.Ref, into)
		if err != nil {
			return res, fmt.Errorf("absorb contact: conversation %s: %w", sn.Ref.ID, err)
		}
		if id != "" {
			res.Conversations = append(res.Conversations, id)
		}
	}
	if res.Membership, err = s.moveMember(ctx, tenantID, from, into); err != nil {
		return res, fmt.Errorf("absorb contact: membership: %w", err)
	}
	prefs := &ContactPrefs{db: s.db, fs: s.fs, now: s.now}
	if err := prefs.move(ctx, tenantID, from, into); err != nil {
		return res, fmt.Errorf("absorb contact: preferences: %w", err)
	}
	return res, nil
}

// moveMember makes into a member of the tenant by from's member document, in one transaction,
// unless into has its own. It reports whether into is a member by the moved document.
func (s *Memberships) moveMember(ctx context.Context, tenantID string, from, into Contact) (bool, error) {
	members := s.tenantDoc(tenantID).Collection(TenantMembers)
	oldRef, newRef := members.Doc(from.ID), members.Doc(into.ID)
	return runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		snaps, err := tx.GetAll([]*firestore.DocumentRef{oldRef, newRef})
		if err != nil {
			return false, err
		}
		doc, ok, err := firstExisting[memberDoc](snaps[:1])
		if err != nil || !ok {
			return false, err
		}
		if err := tx.Delete(oldRef); err != nil {
			return false, err
		}
		if snaps[1].Exists() {
			return false, nil // into's own membership stands
		}
		doc.ContactID, doc.WaID, doc.UserID = into.ID, into.WaID, into.UserID
		return true, tx.Create(newRef, doc)
	})
}

// continueConversation copies the open conversation at ref to into's conversation on the same
// number and closes it; it returns the new conversation's id, empty when there was nothing to
// move.
func (s *Memberships) continueConversation(ctx context.Context, ref *firestore.DocumentRef, into Contact) (string, error) {
	return runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (string, error) {
		conv, err := readTx[Conversation](tx, ref)
		if err != nil {
			return "", err
		}
		if conv.Status != ConversationOpen || conv.MovedTo != "" {
			return "", nil
		}
		id := ConversationID(s.db.keyer, conv.TenantID, conv.PhoneNumberID, into.ID)
		if id == conv.ID {
			return "", nil
		}
		newRef := s.fs.Collection(Conversations).Doc(id)
		exists, err := existsTx(tx, newRef)
		switch {
		case err != nil:
			return "", err
		case !exists:
			now := s.now()
			next := conv
			next.ID, next.ContactID, next.MovedFrom, next.Lease = id, into.ID, conv.ID, Lease{}
			next.Contact, next.UserID, next.Username = into.WaID, into.UserID, into.Username
			next.CreatedAt, next.UpdatedAt = now, now
			if err := tx.Create(newRef, next); err != nil {
				return "", err
			}
		}
		return id, tx.Update(ref, []firestore.Update{{Path: "moved_to", Value: id}, {Path: "status", Value: ConversationClosed}})
	})
}
