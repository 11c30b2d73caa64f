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
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/randid"
)

// A tenant's contacts (CONTRACT.md, Wave 4): one document per person with a stable id, and one
// alias document per identifier that finds it. They live under the tenant, do not expire, and go
// with it (DeleteTenant).
const (
	// TenantContacts, under a tenant, holds its contacts: tenants/{id}/contacts/{ct_…}.
	TenantContacts = "contacts"
	// ContactAliases, under a tenant, holds the identifiers that find a contact, each under its
	// keyed id (aliasID): tenants/{id}/contact_aliases/{…}. Its name says nothing of the person.
	ContactAliases = "contact_aliases"
)

// ContactIDPrefix starts every contact id.
const ContactIDPrefix = "ct_"

// Contact is one person for one tenant: a stable id (never re-keyed) and what wapipe knows of
// them. Its identifiers are personal data: stored, never logged.
type Contact struct {
	ID       string `firestore:"id" json:"id"`
	TenantID string `firestore:"tenant_id" json:"tenant_id"`
	contact.Identity
	// MergedInto names the contact this one was merged into, when the phone of one and the
	// BSUID of the other turned out to be one person's: its aliases point there now.
	MergedInto string    `firestore:"merged_into,omitempty" json:"merged_into,omitempty"`
	CreatedAt  time.Time `firestore:"created_at" json:"created_at"`
	UpdatedAt  time.Time `firestore:"updated_at" json:"updated_at"`
}

// aliasDoc is a contact_aliases document: an identifier of a contact. It holds the kind, never
// the value (the value is on the contact), and the key its id was made with.
type aliasDoc struct {
	ContactID string    `firestore:"contact_id"`
	Kind      string    `firestore:"kind"`
	KeyID     string    `firestore:"key_id"`
	CreatedAt time.Time `firestore:"created_at"`
}

// Contacts keeps the tenants' contacts and their aliases.
type Contacts struct {
	db  *DB
	fs  *firestore.Client
	now func() time.Time
}

// NewContacts returns the contact store; only opts.Now is used. Ids are keyed with db's keyer.
func NewContacts(db *DB, opts Options) *Contacts {
	return &Contacts{db: db, fs: db.fs, now: opts.withDefaults().Now}
}

func (s *Contacts) contactDoc(tenantID, id string) *firestore.DocumentRef {
	return s.fs.Collection(TenantsCollection).Doc(tenantID).Collection(TenantContacts).Doc(id)
}

// aliasID is the document id of an identifier of a person for a tenant, under keyer k.
func aliasID(k *keyedid.Keyer, tenantID string, key contact.Key) string {
	return k.ID("contact-alias", tenantID, string(key.Kind), key.Value)
}

func (s *Contacts) aliasDoc(k *keyedid.Keyer, tenantID string, key contact.Key) *firestore.DocumentRef {
	return s.fs.Collection(TenantsCollection).Doc(tenantID).Collection(ContactAliases).Doc(aliasID(k, tenantID, key))
}

// keyers are the keyers whose aliases are read: the current one, then the previous one during a
// key rotation (until `wapipe migrate --rekey` has run).
func (s *Contacts) keyers() []*keyedid.Keyer {
	k := s.db.keyer
	if p := k.Previous(); p != nil {
		return []*keyedid.Keyer{k, p}
	}
	return []*keyedid.Keyer{k}
}

// Resolution is what Resolve found.
type Resolution struct {
	Contact Contact
	// Created: the contact did not exist.
	Created bool
	// Absorbed are the contacts this call merged into Contact (a phone and a BSUID that had
	// each a contact arrived together): what they had (conversations, membership, preferences)
	// is the caller's to carry over with Absorb.
	Absorbed []Contact
}

// Resolve returns tenantID's contact of the person id names, creating it when no identifier of
// id is known, adding as aliases the identifiers it did not have, and merging into the older one
// two contacts that id shows to be one person. It refuses an identity with no identifier
// (contact.Identity.IsZero): nothing is ever keyed by an empty one.
//
// A person already known by every identifier id carries costs two reads (the aliases, in one
// call, then the contact) and no write; anything new is decided in one transaction, so two
// messages of a new person arriving at once make one contact.
func (s *Contacts) Resolve(ctx context.Context, tenantID string, id contact.Identity) (Resolution, error) {
	if tenantID == "" || strings.Contains(tenantID, "/") || id.IsZero() {
		return Resolution{}, fmt.Errorf("resolve contact: %w", errNoContact)
	}
	c, state, err := s.known(ctx, tenantID, id)
	switch {
	case err != nil:
		return Resolution{}, err
	case state == knownWhole:
		return Resolution{Contact: c}, nil
	case state == knownNone:
		if res, ok, err := s.create(ctx, tenantID, id); err != nil || ok {
			return res, err
		}
	}
	res, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (Resolution, error) {
		return s.resolveTx(tx, tenantID, id, identityChange{})
	})
	if err != nil {
		return Resolution{}, fmt.Errorf("resolve contact of %s: %w", tenantID, err)
	}
	return res, nil
}

// What Resolve's first read found of a person's identifiers.
type knownState int

const (
	// knownNone: no identifier finds anyone, under any key in use.
	knownNone knownState = iota
	// knownWhole: every identifier finds one live contact under the current key, and the
	// contact already says everything the identity says.
	knownWhole
	// knownPartly: anything else (a new identifier, two contacts, a merged one, a previous
	// key's alias): the transaction decides.
	knownPartly
)

// known is Resolve's fast path: one read of every alias of id (under every key in use), then,
// when they name one contact, one read of it.
func (s *Contacts) known(ctx context.Context, tenantID string, id contact.Identity) (Contact, knownState, error) {
	keys := id.Keys()
	var refs []*firestore.DocumentRef
	for _, k := range s.keyers() {
		for _, key := range keys {
			refs = append(refs, s.aliasDoc(k, tenantID, key))
		}
	}
	snaps, err := s.fs.GetAll(ctx, refs)
	if err != nil {
		return Contact{}, knownPartly, fmt.Errorf("read contact aliases: %w", err)
	}
	contactID, found := "", 0
	for i, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		found++
		var a aliasDoc
		if err := sn.DataTo(&a); err != nil {
			return Contact{}, knownPartly, fmt.Errorf("decode contact alias: %w", err)
		}
		if i >= len(keys) || (contactID != "" && a.ContactID != contactID) {
			return Contact{}, knownPartly, nil
		}
		contactID = a.ContactID
	}
	switch {
	case found == 0:
		return Contact{}, knownNone, nil
	case found < len(keys):
		return Contact{}, knownPartly, nil
	}
	c, err := getDoc[Contact](ctx, s.contactDoc(tenantID, contactID), "contact")
	if errors.Is(err, ErrNotFound) {
		return Contact{}, knownPartly, nil
	}
	if err != nil || c.MergedInto != "" || c.Identity.Merge(id) != c.Identity {
		return Contact{}, knownPartly, err
	}
	return c, knownWhole, nil
}

// create makes the contact of a person no identifier finds, without a transaction: the first
// identifier's alias is created with Create, which only one of two messages of a new person
// arriving at once can do; the other adopts the winner's contact (ok false: Resolve's
// transaction finds it, and adds what it lacks). Contention on a transaction would make one of
// them wait seconds, and its turn run after the other's whatever their order. Two writes, and
// one per further identifier.
func (s *Contacts) create(ctx context.Context, tenantID string, id contact.Identity) (Resolution, bool, error) {
	now := s.now()
	c := Contact{ID: ContactIDPrefix + randid.Hex(16), TenantID: tenantID, Identity: id, CreatedAt: now, UpdatedAt: now}
	if _, err := s.contactDoc(tenantID, c.ID).Create(ctx, c); err != nil {
		return Resolution{}, false, fmt.Errorf("create contact: %w", err)
	}
	for i, key := range id.Keys() {
		doc := aliasDoc{ContactID: c.ID, Kind: string(key.Kind), KeyID: s.db.keyer.KeyID(), CreatedAt: now}
		_, err := s.aliasDoc(s.db.keyer, tenantID, key).Create(ctx, doc)
		switch {
		case status.Code(err) == codes.AlreadyExists && i == 0:
			// Another message made the person first: theirs is the contact; ours goes.
			_, _ = s.contactDoc(tenantID, c.ID).Delete(ctx)
			return Resolution{}, false, nil
		case status.Code(err) == codes.AlreadyExists:
			// This identifier is another contact's: the transaction merges the two.
			return Resolution{}, false, nil
		case err != nil:
			return Resolution{}, false, fmt.Errorf("create contact alias: %w", err)
		}
	}
	return Resolution{Contact: c, Created: true}, true, nil
}

// identityChange is what ChangeIdentity asks of resolveTx beside a plain resolution.
type identityChange struct {
	// previous names the person as they were known; the identifiers of the resolution (id)
	// are what they are now.
	previous contact.Identity
	// phoneChanged: the person's phone is no longer previous.WaID (user_changed_number): its
	// alias is detached, so a recycled number is a stranger, and the contact's phone is the
	// new one, or unknown.
	phoneChanged bool
}

// resolveTx is Resolve's transaction, and ChangeIdentity's when ch.previous is set: it finds the
// contacts of every identifier of id (and of ch.previous), keeps the oldest, merges the others
// into it, and makes every identifier the contact now has an alias of it under the current key.
func (s *Contacts) resolveTx(tx *firestore.Transaction, tenantID string, id contact.Identity, ch identityChange) (Resolution, error) {
	now := s.now()
	keys := append(ch.previous.Keys(), id.Keys()...)
	found, err := s.readAliases(tx, tenantID, keys)
	if err != nil {
		return Resolution{}, err
	}
	if ch.phoneChanged {
		found = withoutReusedPhone(found, ch.previous.WaID)
	}
	live, err := s.readContacts(tx, tenantID, found)
	if err != nil {
		return Resolution{}, err
	}
	var res Resolution
	if len(live) == 0 {
		if !ch.previous.IsZero() {
			// Nobody wapipe knows changed: there is nothing to carry over, and the next
			// message makes the contact.
			return Resolution{}, nil
		}
		res.Created = true
		res.Contact = Contact{ID: ContactIDPrefix + randid.Hex(16), TenantID: tenantID, CreatedAt: now}
	} else {
		res.Contact, res.Absorbed = live[0], live[1:]
	}
	c := &res.Contact
	was := c.Identity
	next, detach := nextIdentity(*c, res.Absorbed, found, id, ch)
	c.Identity = next
	if detach != "" && detach != next.WaID {
		if err := s.detach(tx, tenantID, contact.Key{Kind: contact.KindPhone, Value: detach}, found, c.ID, res.Absorbed); err != nil {
			return Resolution{}, err
		}
	}
	if err := s.writeAliases(tx, tenantID, c.ID, next.Keys(), found, now); err != nil {
		return Resolution{}, err
	}
	for _, a := range res.Absorbed {
		if err := tx.Update(s.contactDoc(tenantID, a.ID), []firestore.Update{
			{Path: "merged_into", Value: c.ID}, {Path: "updated_at", Value: now},
		}); err != nil {
			return Resolution{}, fmt.Errorf("merge contact: %w", err)
		}
	}
	if res.Created || next != was || len(res.Absorbed) > 0 {
		c.UpdatedAt = now
		if err := tx.Set(s.contactDoc(tenantID, c.ID), *c); err != nil {
			return Resolution{}, fmt.Errorf("write contact: %w", err)
		}
	}
	return res, nil
}

// nextIdentity is what contact c says of the person once id (and, for an identity change, ch)
// is taken in, having absorbed absorbed, and the phone that stops finding it ("" for none).
// found are the aliases the transaction read.
func nextIdentity(c Contact, absorbed []Contact, found []aliasHit, id contact.Identity, ch identityChange) (contact.Identity, string) {
	next := c.Identity
	for _, a := range absorbed {
		// The survivor's own identifiers win over those it absorbs.
		next = a.Identity.Merge(next)
	}
	// known: the identifier found this contact (the survivor itself) already. A known
	// identifier that is not the contact's current one is an old one (a late message from a
	// previous BSUID): it never takes the current one's place. One that found an absorbed
	// contact is as new to the survivor as one never seen.
	known := func(k contact.Key) bool {
		return slices.ContainsFunc(found, func(h aliasHit) bool { return h.key == k && h.contactID == c.ID })
	}
	newer := func(kind contact.Kind, v, cur string) bool {
		return v != "" && (cur == "" || !known(contact.Key{Kind: kind, Value: v}))
	}
	detach := ""
	switch {
	case ch.phoneChanged:
		if id.WaID != "" || next.WaID == ch.previous.WaID {
			next.WaID = id.WaID
		}
		detach = ch.previous.WaID
	case newer(contact.KindPhone, id.WaID, next.WaID):
		// Another phone for the same BSUID: the new one is theirs now, and the old one, which
		// may be given to someone else, must not find this contact.
		detach, next.WaID = next.WaID, id.WaID
	}
	if newer(contact.KindUser, id.UserID, next.UserID) {
		next.UserID = id.UserID
	}
	if newer(contact.KindParent, id.ParentUserID, next.ParentUserID) {
		next.ParentUserID = id.ParentUserID
	}
	return next.Merge(contact.Identity{Username: id.Username, Name: id.Name}), detach
}

// withoutReusedPhone drops, from the aliases a change of number found, the old phone's when it
// names a contact that none of the person's other identifiers (the previous BSUID, the current
// ones) finds, while one of them finds someone: the change was applied already and the number
// is someone else's by now (a redelivered notice). Merging them would hand the person's contact,
// conversation and role to whoever got the number next.
func withoutReusedPhone(found []aliasHit, phone string) []aliasHit {
	byPhone := contact.Key{Kind: contact.KindPhone, Value: phone}
	var others []string
	for _, h := range found {
		if h.key != byPhone {
			others = append(others, h.contactID)
		}
	}
	if len(others) == 0 {
		return found
	}
	return slices.DeleteFunc(found, func(h aliasHit) bool { return h.key == byPhone && !slices.Contains(others, h.contactID) })
}

// aliasHit is an alias found: the contact it names, under which key it was found.
type aliasHit struct {
	key       contact.Key
	contactID string
	// current: its id is the current key's (else the previous key's, to be rewritten).
	current bool
}

// readAliases reads, in tx, the aliases of keys under every keyer in use.
func (s *Contacts) readAliases(tx *firestore.Transaction, tenantID string, keys []contact.Key) ([]aliasHit, error) {
	var refs []*firestore.DocumentRef
	var meta []aliasHit
	for i, k := range s.keyers() {
		for _, key := range keys {
			refs = append(refs, s.aliasDoc(k, tenantID, key))
			meta = append(meta, aliasHit{key: key, current: i == 0})
		}
	}
	snaps, err := tx.GetAll(refs)
	if err != nil {
		return nil, fmt.Errorf("read contact aliases: %w", err)
	}
	aliases, err := decodeAll[aliasDoc](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode contact alias: %w", err)
	}
	var out []aliasHit
	for i, a := range aliases {
		if a != nil {
			h := meta[i]
			h.contactID = a.ContactID
			out = append(out, h)
		}
	}
	return out, nil
}

// readContacts reads, in tx, the contacts the aliases name, following a merge once (merges
// point aliases at the survivor, so a chain is never longer), oldest first.
func (s *Contacts) readContacts(tx *firestore.Transaction, tenantID string, hits []aliasHit) ([]Contact, error) {
	var ids []string
	for _, h := range hits {
		if !slices.Contains(ids, h.contactID) {
			ids = append(ids, h.contactID)
		}
	}
	cs, err := s.getContacts(tx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	var live []Contact
	var follow []string
	for _, c := range cs {
		switch {
		case c.MergedInto == "":
			live = append(live, c)
		case !slices.Contains(ids, c.MergedInto):
			follow = append(follow, c.MergedInto)
		}
	}
	more, err := s.getContacts(tx, tenantID, follow)
	if err != nil {
		return nil, err
	}
	for _, c := range more {
		if c.MergedInto == "" && !slices.ContainsFunc(live, func(l Contact) bool { return l.ID == c.ID }) {
			live = append(live, c)
		}
	}
	slices.SortFunc(live, olderFirst)
	return live, nil
}

// olderFirst orders contacts by creation, then id: the older of two is the one that survives a
// merge.
func olderFirst(a, b Contact) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// getContacts reads the contacts ids (those that exist), in tx.
func (s *Contacts) getContacts(tx *firestore.Transaction, tenantID string, ids []string) ([]Contact, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	refs := make([]*firestore.DocumentRef, len(ids))
	for i, id := range ids {
		refs[i] = s.contactDoc(tenantID, id)
	}
	snaps, err := tx.GetAll(refs)
	if err != nil {
		return nil, fmt.Errorf("read contacts: %w", err)
	}
	cs, err := decodeAll[Contact](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode contact: %w", err)
	}
	var out []Contact
	for _, c := range cs {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, nil
}

// writeAliases makes each of keys an alias of contactID under the current key, writing only
// those that are missing or name another contact.
func (s *Contacts) writeAliases(tx *firestore.Transaction, tenantID, contactID string, keys []contact.Key, found []aliasHit, now time.Time) error {
	for _, key := range keys {
		ok := slices.ContainsFunc(found, func(h aliasHit) bool { return h.key == key && h.current && h.contactID == contactID })
		if ok {
			continue
		}
		doc := aliasDoc{ContactID: contactID, Kind: string(key.Kind), KeyID: s.db.keyer.KeyID(), CreatedAt: now}
		if err := tx.Set(s.aliasDoc(s.db.keyer, tenantID, key), doc); err != nil {
			return fmt.Errorf("write contact alias: %w", err)
		}
	}
	return nil
}

// detach deletes the alias key when it names the contact (or one it absorbs), under every key
// in use.
func (s *Contacts) detach(tx *firestore.Transaction, tenantID string, key contact.Key, found []aliasHit, contactID string, absorbed []Contact) error {
	ours := func(id string) bool {
		return id == contactID || slices.ContainsFunc(absorbed, func(a Contact) bool { return a.ID == id })
	}
	for i, k := range s.keyers() {
		for _, h := range found {
			if h.key == key && h.current == (i == 0) && ours(h.contactID) {
				if err := tx.Delete(s.aliasDoc(k, tenantID, key)); err != nil {
					return fmt.Errorf("detach contact alias: %w", err)
				}
			}
		}
	}
	return nil
}

// Find returns tenantID's contact of the person id names, without creating or changing
// anything: ok is false when none of its identifiers is known. When two contacts answer (not
// merged yet), the older one. One or two reads of aliases, then one of contacts.
func (s *Contacts) Find(ctx context.Context, tenantID string, id contact.Identity) (Contact, bool, error) {
	got, err := s.FindIn(ctx, []string{tenantID}, id)
	if err != nil {
		return Contact{}, false, err
	}
	c, ok := got[tenantID]
	return c, ok, nil
}

// FindIn is Find for several tenants at once (the tenants of a shared number): the contact of
// each tenant that knows the person, in two calls whatever their number.
func (s *Contacts) FindIn(ctx context.Context, tenantIDs []string, id contact.Identity) (map[string]Contact, error) {
	keys := id.Keys()
	out := map[string]Contact{}
	if len(keys) == 0 || len(tenantIDs) == 0 {
		return out, nil
	}
	type at struct{ tenant string }
	var refs []*firestore.DocumentRef
	var owners []string
	for _, t := range tenantIDs {
		if t == "" || strings.Contains(t, "/") {
			continue
		}
		for _, k := range s.keyers() {
			for _, key := range keys {
				refs = append(refs, s.aliasDoc(k, t, key))
				owners = append(owners, t)
			}
		}
	}
	snaps, err := s.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read contact aliases: %w", err)
	}
	aliases, err := decodeAll[aliasDoc](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode contact alias: %w", err)
	}
	var crefs []*firestore.DocumentRef
	seen := map[string]bool{}
	for i, a := range aliases {
		if a == nil {
			continue
		}
		k := owners[i] + "/" + a.ContactID
		if !seen[k] {
			seen[k] = true
			crefs = append(crefs, s.contactDoc(owners[i], a.ContactID))
		}
	}
	cs, err := s.readLive(ctx, crefs)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if cur, ok := out[c.TenantID]; !ok || olderFirst(c, cur) < 0 {
			out[c.TenantID] = c
		}
	}
	return out, nil
}

// readLive reads contacts and, for a merged one, the contact it was merged into.
func (s *Contacts) readLive(ctx context.Context, refs []*firestore.DocumentRef) ([]Contact, error) {
	var out []Contact
	for round := 0; round < 2 && len(refs) > 0; round++ {
		snaps, err := s.fs.GetAll(ctx, refs)
		if err != nil {
			return nil, fmt.Errorf("read contacts: %w", err)
		}
		cs, err := decodeAll[Contact](snaps)
		if err != nil {
			return nil, fmt.Errorf("decode contact: %w", err)
		}
		refs = nil
		for _, c := range cs {
			if c == nil {
				continue
			}
			if c.MergedInto != "" {
				refs = append(refs, s.contactDoc(c.TenantID, c.MergedInto))
				continue
			}
			out = append(out, *c)
		}
	}
	return out, nil
}

// Get reads tenantID's contact id, following a merge; ErrNotFound when there is none.
func (s *Contacts) Get(ctx context.Context, tenantID, id string) (Contact, error) {
	if tenantID == "" || id == "" || strings.Contains(id, "/") || strings.Contains(tenantID, "/") {
		return Contact{}, ErrNotFound
	}
	cs, err := s.readLive(ctx, []*firestore.DocumentRef{s.contactDoc(tenantID, id)})
	if err != nil {
		return Contact{}, err
	}
	if len(cs) == 0 {
		return Contact{}, ErrNotFound
	}
	return cs[0], nil
}

// IdentityMove is what ChangeIdentity did for one tenant.
type IdentityMove struct {
	// Found: the tenant knew the person (by a previous or a current identifier).
	Found   bool
	Contact Contact
	// Absorbed are contacts merged into Contact (one made by a message from the new identity
	// that arrived before the notice): Absorb carries what they had over.
	Absorbed []Contact
	// DetachedPhone is the previous phone, when it no longer finds the contact.
	DetachedPhone string
}

// ChangeIdentity follows a person whose identifiers changed from previous to current
// (user_changed_number: phoneChanged; user_changed_user_id, user_id_update) in tenantID: the
// contact stays the same (its id, so its conversations, membership, windows, preferences and
// limits), its current identifiers become its aliases, and its previous phone stops finding it
// when the phone changed (the number may be given to someone else). A contact that a message
// from the new identity made already is merged into the older one. Doing it again changes
// nothing. One transaction.
func (s *Contacts) ChangeIdentity(ctx context.Context, tenantID string, previous, current contact.Identity, phoneChanged bool) (IdentityMove, error) {
	if tenantID == "" || strings.Contains(tenantID, "/") || (previous.IsZero() && current.IsZero()) {
		return IdentityMove{}, fmt.Errorf("change contact identity: %w", errNoContact)
	}
	res, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (Resolution, error) {
		return s.resolveTx(tx, tenantID, current, identityChange{previous: previous, phoneChanged: phoneChanged})
	})
	if err != nil {
		return IdentityMove{}, fmt.Errorf("change contact identity in %s: %w", tenantID, err)
	}
	mv := IdentityMove{Found: res.Contact.ID != "", Contact: res.Contact, Absorbed: res.Absorbed}
	if mv.Found && phoneChanged && previous.WaID != "" && res.Contact.WaID != previous.WaID {
		mv.DetachedPhone = previous.WaID
	}
	return mv, nil
}
