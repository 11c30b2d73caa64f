package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/contact"
)

// Migrator carries over the documents about people to the ids contacts give (`wapipe migrate`):
// those named after a phone number before contacts (legacy.go), and, with Rekey, those named
// under a previous LOG_HASH_KEY. Every step is idempotent and resumable: a run that stops (a
// crash, a conversation busy with a turn) is run again, and does what is left.
type Migrator struct {
	db  *DB
	fs  *firestore.Client
	now func() time.Time
	// contacts is the contact store on the same database.
	contacts *Contacts
}

// NewMigrator returns the migrator of db; only opts.Now is used. It names documents with db's
// keyer (the current LOG_HASH_KEY's).
func NewMigrator(db *DB, opts Options) *Migrator {
	now := opts.withDefaults().Now
	return &Migrator{db: db, fs: db.fs, now: now, contacts: &Contacts{db: db, fs: db.fs, now: now}}
}

// MigrateOptions say what a run does.
type MigrateOptions struct {
	// DryRun counts what would move and writes nothing (not even contacts).
	DryRun bool
	// Rekey also moves what was named under another key than the current one (a LOG_HASH_KEY
	// rotation): contact aliases, conversations, sender windows, quota shares, preferences and
	// shared-number choices. The previous key must be known (LOG_HASH_KEY_PREVIOUS) so that
	// the services still read those ids while it runs.
	Rekey bool
	// Progress, when set, is told each step's count as it ends.
	Progress func(step string, n int)
}

// The steps of a migration, in the order they run (MigrationReport.Moved's keys).
const (
	StepMembers       = "members"
	StepInvites       = "invites"
	StepChoices       = "shared_number_choices"
	StepConversations = "conversations"
	StepWindows       = "sender_windows"
	StepShares        = "quota_shares"
	StepPreferences   = "preferences"
	StepAliases       = "contact_aliases"
)

// MigrationReport says what a run moved (or, dry, would move), by step.
type MigrationReport struct {
	Moved map[string]int
	// Busy counts the conversations a turn held while the run looked at them: run it again.
	Busy int
	// Contacts counts the contacts made for people known only by phone before contacts (a dry
	// run counts those it would make).
	Contacts int
	// Done: nothing is left, and the marker that stops the services' fallback reads is set.
	Done   bool
	DryRun bool
	// toMake are the people a dry run counted in Contacts, once each whatever it found of them.
	toMake map[string]bool
}

// errBusy is a conversation held by a live turn: it is moved by a later run.
var errBusy = errors.New("conversation busy")

// Run runs the migration (see Migrator and MigrateOptions).
func (m *Migrator) Run(ctx context.Context, o MigrateOptions) (MigrationReport, error) {
	rep := MigrationReport{Moved: map[string]int{}, DryRun: o.DryRun}
	marker := m.fs.Collection(Migrations).Doc(ContactsMigration)
	if !o.DryRun {
		if _, err := marker.Set(ctx, map[string]any{"started_at": m.now(), "key_id": m.db.keyer.KeyID()}, firestore.MergeAll); err != nil {
			return rep, fmt.Errorf("mark the migration started: %w", err)
		}
	}
	tenants, err := queryAll[tenantDoc](ctx, m.fs.Collection(TenantsCollection).Query, "tenants")
	if err != nil {
		return rep, err
	}
	steps := []struct {
		name string
		run  func(context.Context, []tenantDoc, MigrateOptions, *MigrationReport) (int, error)
	}{
		{StepMembers, m.members},
		{StepInvites, m.invites},
		{StepChoices, m.choices},
		{StepConversations, m.conversations},
		{StepWindows, m.windows},
		{StepShares, m.shares},
		{StepPreferences, m.preferences},
		{StepAliases, m.aliases},
	}
	for _, st := range steps {
		n, err := st.run(ctx, tenants, o, &rep)
		rep.Moved[st.name] = n
		if o.Progress != nil {
			o.Progress(st.name, n)
		}
		if err != nil {
			return rep, fmt.Errorf("migrate %s: %w", st.name, err)
		}
	}
	if o.DryRun || rep.Busy > 0 {
		return rep, nil
	}
	rep.Done = true
	if _, err := marker.Set(ctx, map[string]any{"done_at": m.now(), "moved": rep.Moved, "key_id": m.db.keyer.KeyID()}, firestore.MergeAll); err != nil {
		return rep, fmt.Errorf("mark the migration done: %w", err)
	}
	m.db.forgetMigration()
	return rep, nil
}

// contactOf is tenantID's contact of the person id: resolved (made when need be), or, dry, found
// (a zero contact with ok false when it would be made).
func (m *Migrator) contactOf(ctx context.Context, tenantID string, id contact.Identity, o MigrateOptions, rep *MigrationReport) (Contact, bool, error) {
	if o.DryRun {
		c, ok, err := m.contacts.Find(ctx, tenantID, id)
		if who := tenantID + "\x00" + id.WaID; err == nil && !ok && !rep.toMake[who] {
			if rep.toMake == nil {
				rep.toMake = map[string]bool{}
			}
			rep.toMake[who] = true
			rep.Contacts++
		}
		return c, ok, err
	}
	res, err := m.contacts.Resolve(ctx, tenantID, id)
	if err != nil {
		return Contact{}, false, err
	}
	if res.Created {
		rep.Contacts++
	}
	return res.Contact, true, nil
}

// members moves each member document named after a phone (before contacts) to its contact's id.
func (m *Migrator) members(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	n := 0
	for _, t := range tenants {
		col := m.fs.Collection(TenantsCollection).Doc(t.ID).Collection(TenantMembers)
		snaps, err := col.Documents(ctx).GetAll()
		if err != nil {
			return n, fmt.Errorf("read members of %s: %w", t.ID, err)
		}
		for _, sn := range snaps {
			if strings.HasPrefix(sn.Ref.ID, ContactIDPrefix) {
				continue
			}
			var d memberDoc
			if err := sn.DataTo(&d); err != nil {
				return n, fmt.Errorf("decode member: %w", err)
			}
			phone := d.WaID
			if phone == "" {
				phone = sn.Ref.ID
			}
			c, ok, err := m.contactOf(ctx, t.ID, contact.Identity{WaID: phone, Name: d.Name}, o, rep)
			if err != nil {
				return n, err
			}
			n++
			if o.DryRun || !ok {
				continue
			}
			d.ContactID, d.WaID = c.ID, phone
			if err := m.moveDoc(ctx, sn.Ref, col.Doc(c.ID), d); err != nil {
				return n, fmt.Errorf("move a member of %s: %w", t.ID, err)
			}
		}
	}
	return n, nil
}

// moveDoc writes doc at to unless to exists, and deletes from, in one transaction.
func (m *Migrator) moveDoc(ctx context.Context, from, to *firestore.DocumentRef, doc any) error {
	return m.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if err := createIfMissing(tx, to, doc); err != nil {
			return err
		}
		return tx.Delete(from)
	}, firestore.MaxAttempts(maxTxAttempts))
}

// invites names the contact that used each invite used by a phone before contacts, so that a
// retried turn of the redemption still finds its invite (InviteTenant).
func (m *Migrator) invites(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	n := 0
	for _, t := range tenants {
		snaps, err := m.fs.Collection(TenantsCollection).Doc(t.ID).Collection(TenantInvites).Where("used_by", ">", "").Documents(ctx).GetAll()
		if err != nil {
			return n, fmt.Errorf("read invites of %s: %w", t.ID, err)
		}
		for _, sn := range snaps {
			var d inviteDoc
			if err := sn.DataTo(&d); err != nil {
				return n, fmt.Errorf("decode invite: %w", err)
			}
			if d.UsedBy == "" || strings.HasPrefix(d.UsedBy, ContactIDPrefix) {
				continue
			}
			c, ok, err := m.contactOf(ctx, t.ID, contact.Identity{WaID: d.UsedBy}, o, rep)
			if err != nil {
				return n, err
			}
			n++
			if o.DryRun || !ok {
				continue
			}
			if _, err := sn.Ref.Update(ctx, []firestore.Update{{Path: "used_by", Value: c.ID}}); err != nil {
				return n, fmt.Errorf("update an invite of %s: %w", t.ID, err)
			}
		}
	}
	return n, nil
}

// choices moves each shared-number choice named after a phone to the keyed ids of the person's
// identifiers, and (Rekey) those named under another key.
func (m *Migrator) choices(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	numbers, err := m.fs.Collection(PhoneNumbers).Where("shared", "==", true).Documents(ctx).GetAll()
	if err != nil {
		return 0, fmt.Errorf("read shared numbers: %w", err)
	}
	n := 0
	for _, num := range numbers {
		var nd numberDoc
		if err := num.DataTo(&nd); err != nil {
			return n, fmt.Errorf("decode phone number: %w", err)
		}
		snaps, err := num.Ref.Collection(NumberContacts).Documents(ctx).GetAll()
		if err != nil {
			return n, fmt.Errorf("read the choices on %s: %w", num.Ref.ID, err)
		}
		for _, sn := range snaps {
			var d contactDoc
			if err := sn.DataTo(&d); err != nil {
				return n, fmt.Errorf("decode a choice: %w", err)
			}
			person, moved, err := m.choicePerson(ctx, num.Ref.ID, sn.Ref.ID, d, o)
			if err != nil || !moved {
				if err != nil {
					return n, err
				}
				continue
			}
			n++
			if o.DryRun {
				continue
			}
			err = m.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
				for _, k := range person.Keys() {
					ref := num.Ref.Collection(NumberContacts).Doc(m.db.keyer.ID("number-contact", num.Ref.ID, string(k.Kind), k.Value))
					if err := tx.Set(ref, d); err != nil {
						return err
					}
				}
				return tx.Delete(sn.Ref)
			})
			if err != nil {
				return n, fmt.Errorf("move a choice on %s: %w", num.Ref.ID, err)
			}
		}
	}
	return n, nil
}

// choicePerson is the person a choice document names and whether it is to move: a document
// named after a phone names that phone (with the identifiers the chosen tenant's contact has); a
// keyed one moves only with Rekey, when no identifier of the chosen tenant's contacts names it
// under the current key (its person is then the contact whose identifier names it under the
// previous key).
func (m *Migrator) choicePerson(ctx context.Context, number, docID string, d contactDoc, o MigrateOptions) (contact.Identity, bool, error) {
	if contact.IsPhone(docID) {
		person := contact.Identity{WaID: docID}
		if c, ok, err := m.contacts.Find(ctx, d.TenantID, person); err != nil {
			return person, false, err
		} else if ok {
			person = c.Identity
		}
		return person, true, nil
	}
	if !o.Rekey {
		return contact.Identity{}, false, nil
	}
	prev := m.db.keyer.Previous()
	if prev == nil {
		return contact.Identity{}, false, nil
	}
	cs, err := queryAll[Contact](ctx, m.fs.Collection(TenantsCollection).Doc(d.TenantID).Collection(TenantContacts).Query, "contacts")
	if err != nil {
		return contact.Identity{}, false, err
	}
	for _, c := range cs {
		for _, k := range c.Keys() {
			if prev.ID("number-contact", number, string(k.Kind), k.Value) == docID {
				return c.Identity, true, nil
			}
		}
	}
	return contact.Identity{}, false, nil
}

// conversations moves each conversation named after a phone (or, Rekey, under another key) to
// its contact's id: the lease is taken first, so no turn runs on it while it moves; its stored
// messages are copied, then the new conversation is created and the old one closed, moved_to
// naming it, in one transaction. A message that arrives meanwhile finds the lease held, and its
// task's retry finds the conversation moved. A conversation busy with a turn is left for the
// next run (MigrationReport.Busy).
func (m *Migrator) conversations(ctx context.Context, _ []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	it := m.fs.Collection(Conversations).Documents(ctx)
	defer it.Stop()
	n := 0
	for {
		sn, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read conversations: %w", err)
		}
		var conv Conversation
		if err := sn.DataTo(&conv); err != nil {
			return n, fmt.Errorf("decode conversation %s: %w", sn.Ref.ID, err)
		}
		if conv.MovedTo != "" || conv.TenantID == "" {
			continue
		}
		if conv.ContactID == "" {
			if conv.Contact == "" {
				continue
			}
			c, ok, err := m.contactOf(ctx, conv.TenantID, contact.Identity{WaID: conv.Contact, Name: conv.ContactName}, o, rep)
			if err != nil {
				return n, err
			}
			if !ok {
				n++ // dry: a contact would be made, and the conversation moved
				continue
			}
			conv.ContactID = c.ID
		} else if !o.Rekey {
			continue
		}
		target := ConversationID(m.db.keyer, conv.TenantID, conv.PhoneNumberID, conv.ContactID)
		if target == conv.ID {
			continue
		}
		n++
		if o.DryRun {
			continue
		}
		switch err := m.moveConversation(ctx, conv, target); {
		case errors.Is(err, errBusy):
			n--
			rep.Busy++
		case err != nil:
			return n, fmt.Errorf("move conversation %s: %w", conv.ID, err)
		}
	}
}

// migrationHolder is the lease holder of a conversation being moved.
const migrationHolder = "wapipe-migrate"

// moveConversation moves conv to target (see conversations).
func (m *Migrator) moveConversation(ctx context.Context, conv Conversation, target string) error {
	ref := m.fs.Collection(Conversations).Doc(conv.ID)
	lease, err := runTx(ctx, m.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (Lease, error) {
		cur, err := readTx[Conversation](tx, ref)
		if err != nil {
			return Lease{}, err
		}
		now := m.now()
		if cur.Lease.Holder == migrationHolder {
			return cur.Lease, nil // an earlier run's, stopped mid-way
		}
		if !cur.Lease.Free(now) {
			return Lease{}, errBusy
		}
		l := Lease{Holder: migrationHolder, Fence: cur.Lease.Fence + 1, ExpiresAt: now.Add(5 * time.Minute)}
		return l, tx.Update(ref, []firestore.Update{{Path: "lease", Value: l}, {Path: "updated_at", Value: now}})
	})
	if err != nil {
		return err
	}
	msgs, err := ref.Collection(ConversationMessages).Documents(ctx).GetAll()
	if err != nil {
		return fmt.Errorf("read its messages: %w", err)
	}
	dst := m.fs.Collection(Conversations).Doc(target)
	for _, sn := range msgs {
		// As stored, field for field (arrived_at, the inbox flag and the recorded replies with
		// their idempotency keys included): a turn committed before the move performs its
		// effects under the keys it recorded, once.
		if _, err := dst.Collection(ConversationMessages).Doc(sn.Ref.ID).Set(ctx, sn.Data()); err != nil {
			return fmt.Errorf("copy a message: %w", err)
		}
	}
	return m.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		cur, err := readTx[Conversation](tx, ref)
		if err != nil {
			return err
		}
		if cur.Lease.Holder != migrationHolder || cur.Lease.Fence != lease.Fence {
			return errBusy // a turn took over an expired migration lease: next run
		}
		now := m.now()
		next := cur
		next.ID, next.ContactID, next.MovedFrom = target, conv.ContactID, cur.ID
		next.Lease = Lease{Fence: cur.Lease.Fence}
		next.UpdatedAt = now
		if err := createIfMissing(tx, dst, next); err != nil {
			return err
		}
		return tx.Update(ref, []firestore.Update{
			{Path: "moved_to", Value: target}, {Path: "status", Value: ConversationClosed},
			{Path: "lease", Value: Lease{Fence: cur.Lease.Fence}}, {Path: "updated_at", Value: now},
		})
	}, firestore.MaxAttempts(maxTxAttempts))
}

// windows moves each contact's sender window named after its phone (or, Rekey, under another
// key) to its keyed id.
func (m *Migrator) windows(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	return m.perContact(ctx, tenants, o, func(t string, c Contact) []move {
		var mv []move
		if c.WaID != "" {
			mv = append(mv, move{from: legacySenderWindowID(t, c.WaID)})
		}
		if p := m.db.keyer.Previous(); o.Rekey && p != nil {
			mv = append(mv, move{from: p.ID("sender", t, c.ID)})
		}
		to := m.db.keyer.ID("sender", t, c.ID)
		for i := range mv {
			mv[i].to, mv[i].collection, mv[i].contactID = to, SenderWindows, c.ID
		}
		return mv
	})
}

// shares moves each contact's quota shares of this month and the last one named after its phone
// (or, Rekey, under another key) to their keyed ids: older months are no longer counted.
func (m *Migrator) shares(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	now := m.now().UTC()
	periods := []string{now.Format("2006-01"), now.AddDate(0, -1, -now.Day()+1).Format("2006-01")}
	return m.perContact(ctx, tenants, o, func(t string, c Contact) []move {
		var mv []move
		for _, p := range periods {
			to := m.db.keyer.ID("share", t, c.ID, p)
			if c.WaID != "" {
				mv = append(mv, move{from: legacyShareID(t, c.WaID, p), to: to})
			}
			if prev := m.db.keyer.Previous(); o.Rekey && prev != nil {
				mv = append(mv, move{from: prev.ID("share", t, c.ID, p), to: to})
			}
		}
		for i := range mv {
			mv[i].collection, mv[i].contactID = SenderWindows, c.ID
		}
		return mv
	})
}

// preferences moves each contact's marketing preference named after its phone (or, Rekey, under
// another key) to its keyed id.
func (m *Migrator) preferences(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	return m.perContact(ctx, tenants, o, func(t string, c Contact) []move {
		to := m.db.keyer.ID("preference", t, c.ID)
		var mv []move
		if c.WaID != "" {
			mv = append(mv, move{from: legacyPreferenceID(t, c.WaID), to: to})
		}
		if p := m.db.keyer.Previous(); o.Rekey && p != nil {
			mv = append(mv, move{from: p.ID("preference", t, c.ID), to: to})
		}
		for i := range mv {
			mv[i].collection, mv[i].contactID = ContactPreferences, c.ID
		}
		return mv
	})
}

// move is one document to move within a collection.
type move struct {
	collection, from, to, contactID string
}

// perContact runs the moves moves gives for each contact of each tenant, counting those that
// moved (or, dry, would move).
func (m *Migrator) perContact(ctx context.Context, tenants []tenantDoc, o MigrateOptions, moves func(tenantID string, c Contact) []move) (int, error) {
	n := 0
	for _, t := range tenants {
		cs, err := queryAll[Contact](ctx, m.fs.Collection(TenantsCollection).Doc(t.ID).Collection(TenantContacts).Query, "contacts")
		if err != nil {
			return n, err
		}
		for _, c := range cs {
			if c.MergedInto != "" {
				continue
			}
			for _, mv := range moves(t.ID, c) {
				if mv.from == mv.to {
					continue
				}
				moved, err := m.moveField(ctx, mv, o.DryRun)
				if err != nil {
					return n, err
				}
				if moved {
					n++
				}
			}
		}
	}
	return n, nil
}

// moveField moves one document: from's data (with contact_id) becomes to's unless to exists, and
// from goes. It reports whether from existed.
func (m *Migrator) moveField(ctx context.Context, mv move, dry bool) (bool, error) {
	col := m.fs.Collection(mv.collection)
	from, to := col.Doc(mv.from), col.Doc(mv.to)
	snap, err := from.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s/%s: %w", mv.collection, mv.from, err)
	}
	if dry {
		return true, nil
	}
	data := maps.Clone(snap.Data())
	data["contact_id"] = mv.contactID
	delete(data, "contact")
	if err := m.moveDoc(ctx, from, to, data); err != nil {
		return false, fmt.Errorf("move %s/%s: %w", mv.collection, mv.from, err)
	}
	return true, nil
}

// aliases (Rekey only) writes every contact's aliases under the current key and deletes those
// made under another.
func (m *Migrator) aliases(ctx context.Context, tenants []tenantDoc, o MigrateOptions, rep *MigrationReport) (int, error) {
	if !o.Rekey {
		return 0, nil
	}
	n := 0
	kid := m.db.keyer.KeyID()
	for _, t := range tenants {
		col := m.fs.Collection(TenantsCollection).Doc(t.ID).Collection(ContactAliases)
		cs, err := queryAll[Contact](ctx, m.fs.Collection(TenantsCollection).Doc(t.ID).Collection(TenantContacts).Query, "contacts")
		if err != nil {
			return n, err
		}
		for _, c := range cs {
			if c.MergedInto != "" {
				continue
			}
			for _, k := range c.Keys() {
				ref := col.Doc(aliasID(m.db.keyer, t.ID, k))
				if _, err := ref.Get(ctx); err == nil {
					continue
				} else if status.Code(err) != codes.NotFound {
					return n, err
				}
				n++
				if o.DryRun {
					continue
				}
				if _, err := ref.Set(ctx, aliasDoc{ContactID: c.ID, Kind: string(k.Kind), KeyID: kid, CreatedAt: m.now()}); err != nil {
					return n, fmt.Errorf("write an alias: %w", err)
				}
			}
		}
		if o.DryRun {
			continue
		}
		stale, err := col.Where("key_id", "!=", kid).Documents(ctx).GetAll()
		if err != nil {
			return n, fmt.Errorf("read aliases of another key: %w", err)
		}
		for _, sn := range stale {
			if _, err := sn.Ref.Delete(ctx); err != nil {
				return n, fmt.Errorf("delete an alias of another key: %w", err)
			}
		}
	}
	return n, nil
}

// KeyIDOf is the key id (keyedid.Keyer.KeyID) the migration marker names: the key the last
// completed run named documents with; "" when none completed.
func (m *Migrator) KeyIDOf(ctx context.Context) (string, error) {
	d, err := getDoc[migrationDoc](ctx, m.fs.Collection(Migrations).Doc(ContactsMigration), "migration")
	if errors.Is(err, ErrNotFound) || (err == nil && d.DoneAt.IsZero()) {
		return "", nil
	}
	return d.KeyID, err
}
