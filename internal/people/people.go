// Package people says who a message is from, for a tenant, and follows a person whose
// identifiers change.
//
// A message names its sender by a phone number, a business-scoped user id (BSUID) or both
// (package contact); the tenant knows them as one contact with a stable id (store.Contacts).
// Sender resolves the contact (creating it, adding the identifiers it did not have, merging two
// contacts that turn out to be one person and carrying over what the absorbed one had) and
// finds its conversation on the number. Change follows a user_changed_number,
// user_changed_user_id or user_id_update in the tenants of the receiving number: the contact
// keeps its id, so its conversations, membership, 24-hour window, opt-out and limits follow it;
// an old phone stops finding it, and the tenant file's role of that phone is suspended (the
// number may be given to someone else) while the person keeps the role; so they do the role the
// file gives a BSUID they no longer have. A notice redelivered after the old number's new owner
// wrote leaves that new owner alone.
package people

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Contacts finds, makes and changes contacts; *store.Contacts implements it.
type Contacts interface {
	Resolve(ctx context.Context, tenantID string, id contact.Identity) (store.Resolution, error)
	ChangeIdentity(ctx context.Context, tenantID string, previous, current contact.Identity, phoneChanged bool) (store.IdentityMove, error)
}

// Tenants reads tenants and changes what they keep about people; *store.Tenants implements the
// changes and the worker's tenant cache the reads (Reader).
type Tenants interface {
	Absorb(ctx context.Context, tenantID string, from, into store.Contact) (store.AbsorbResult, error)
	SuspendFileMember(ctx context.Context, tenantID, phone string) (bool, error)
	GrantMember(ctx context.Context, tenantID string, c store.Contact, m tenant.Member, invite string) (bool, error)
}

// Reader gives a tenant by id.
type Reader interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Conversations locates a contact's conversation on a number; *store.ConversationStore
// implements it.
type Conversations interface {
	Locate(ctx context.Context, tenantID, phoneNumberID string, c store.Contact) (string, error)
}

// Directory is the tenants' people. Every field is required.
type Directory struct {
	Contacts      Contacts
	Tenants       Tenants
	Reader        Reader
	Conversations Conversations
}

// ErrNobody is a message that names nobody: neither a phone number nor a BSUID. Nothing may be
// keyed by an empty identifier, so it is recorded and not answered.
var ErrNobody = errors.New("the message names no sender: no phone number and no business-scoped user id")

// Sender is who sent a message to a tenant's number.
type Sender struct {
	Contact store.Contact
	// ConversationID is the contact's conversation on the number.
	ConversationID string
}

// Sender returns tenantID's contact of the person id names, and its conversation on
// phoneNumberID (see the package comment). ErrNobody for an identity with no identifier.
func (d *Directory) Sender(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (Sender, error) {
	if id.IsZero() {
		return Sender{}, ErrNobody
	}
	res, err := d.Contacts.Resolve(ctx, tenantID, id)
	if err != nil {
		return Sender{}, err
	}
	if err := d.absorb(ctx, tenantID, res.Contact, res.Absorbed); err != nil {
		return Sender{}, err
	}
	conv, err := d.Conversations.Locate(ctx, tenantID, phoneNumberID, res.Contact)
	if err != nil {
		return Sender{}, err
	}
	if res.Created {
		logging.FromContext(ctx).InfoContext(ctx, "new contact", "event", "contact_created", "tenant_id", tenantID,
			"contact_id", res.Contact.ID, "by_phone", id.WaID != "", "by_user_id", id.UserID != "")
	}
	return Sender{Contact: res.Contact, ConversationID: conv}, nil
}

// absorb carries over what each absorbed contact had to into, and logs the merge.
func (d *Directory) absorb(ctx context.Context, tenantID string, into store.Contact, absorbed []store.Contact) error {
	for _, a := range absorbed {
		moved, err := d.Tenants.Absorb(ctx, tenantID, a, into)
		if err != nil {
			return fmt.Errorf("carry contact %s over to %s: %w", a.ID, into.ID, err)
		}
		logging.FromContext(ctx).InfoContext(ctx, "two contacts were one person: merged into the older", "event", "contacts_merged",
			"tenant_id", tenantID, "contact_id", into.ID, "merged_contact_id", a.ID, "conversations", len(moved.Conversations),
			"membership", moved.Membership)
	}
	return nil
}

// Moved is what Change did in one tenant.
type Moved struct {
	TenantID string
	// Contact is the person as they are now; zero when the tenant did not know them.
	Contact store.Contact
	// SuspendedFileMember: the tenant file listed the person by the phone they left: that
	// entry no longer counts, and the person keeps its role by a membership of their own.
	SuspendedFileMember bool
}

// Change follows the identity change ch in each of tenantIDs (the tenants of the number it came
// to). It is idempotent: a redelivered notice changes nothing more. A tenant that did not know
// the person is left alone (their next message makes the contact).
func (d *Directory) Change(ctx context.Context, tenantIDs []string, ch whatsapp.IdentityChange) ([]Moved, error) {
	logger := logging.FromContext(ctx)
	if ch.Previous.IsZero() || ch.Current.IsZero() {
		logger.WarnContext(ctx, "identity change without a previous or a current identifier: nothing to follow",
			"event", "identity_change_incomplete", "type", ch.Type)
		return nil, nil
	}
	phoneChanged := ch.Type == whatsapp.SystemUserChangedNumber
	var out []Moved
	for _, tenantID := range tenantIDs {
		previous := ch.Previous
		mv, err := d.Contacts.ChangeIdentity(ctx, tenantID, previous, ch.Current, phoneChanged)
		if err != nil {
			return out, err
		}
		if !mv.Found {
			out = append(out, Moved{TenantID: tenantID})
			continue
		}
		if err := d.absorb(ctx, tenantID, mv.Contact, mv.Absorbed); err != nil {
			return out, err
		}
		m := Moved{TenantID: tenantID, Contact: mv.Contact}
		if mv.DetachedPhone != "" {
			if m.SuspendedFileMember, err = d.suspend(ctx, tenantID, mv); err != nil {
				return out, err
			}
		}
		if err := d.keepUserIDRole(ctx, tenantID, previous, mv); err != nil {
			return out, err
		}
		logger.InfoContext(ctx, "contact's identity changed: it keeps its conversations, membership and limits",
			"event", "contact_identity_changed", "type", ch.Type, "tenant_id", tenantID, "contact_id", mv.Contact.ID,
			logging.Phone("previous_phone", mv.DetachedPhone), "suspended_file_member", m.SuspendedFileMember)
		out = append(out, m)
	}
	return out, nil
}

// keepUserIDRole keeps the role of a person the tenant file lists by a business-scoped user id
// they no longer have (Meta makes a new one when they change number): their contact becomes a
// member with that role, and a WARNING asks for the file to list them by their new user_id. A
// BSUID is never given to someone else, so the entry is not suspended: it finds nobody now.
func (d *Directory) keepUserIDRole(ctx context.Context, tenantID string, previous contact.Identity, mv store.IdentityMove) error {
	var left contact.Identity
	if previous.UserID != "" && previous.UserID != mv.Contact.UserID {
		left.UserID = previous.UserID
	}
	if previous.ParentUserID != "" && previous.ParentUserID != mv.Contact.ParentUserID {
		left.ParentUserID = previous.ParentUserID
	}
	if left.IsZero() {
		return nil
	}
	rec, err := d.Reader.Tenant(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	fm, listed := rec.Tenant.MemberOf(left)
	if !listed {
		return nil
	}
	if _, still := rec.Tenant.MemberOf(mv.Contact.Identity); still {
		return nil // the file lists them by a current identifier too
	}
	granted, err := d.Tenants.GrantMember(ctx, tenantID, mv.Contact, fm, store.InviteMovedNumber)
	if err != nil {
		return err
	}
	if granted {
		logging.FromContext(ctx).WarnContext(ctx,
			"a tenant-file member listed by user_id has a new one: they keep their role, until the file lists them by their new user_id",
			"event", "file_member_user_id_changed", "tenant_id", tenantID, "contact_id", mv.Contact.ID, "role", fm.Role)
	}
	return nil
}

// suspend suspends the tenant file's entry of the phone the person left, when it lists it, and
// keeps the person's role by a membership of their contact.
func (d *Directory) suspend(ctx context.Context, tenantID string, mv store.IdentityMove) (bool, error) {
	rec, err := d.Reader.Tenant(ctx, tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read tenant %s: %w", tenantID, err)
	}
	fm, listed := rec.Tenant.MemberOf(contact.Identity{WaID: mv.DetachedPhone})
	if !listed {
		return false, nil
	}
	if _, err := d.Tenants.GrantMember(ctx, tenantID, mv.Contact, fm, store.InviteMovedNumber); err != nil {
		return false, err
	}
	suspended, err := d.Tenants.SuspendFileMember(ctx, tenantID, mv.DetachedPhone)
	if err != nil {
		return false, err
	}
	if suspended {
		logging.FromContext(ctx).WarnContext(ctx,
			"a tenant-file member changed number: the file's entry for the old number is suspended until the file lists them by their new number or user_id",
			"event", "file_member_suspended", "tenant_id", tenantID, "contact_id", mv.Contact.ID, "role", fm.Role,
			logging.Phone("previous_phone", mv.DetachedPhone))
	}
	return true, nil
}
