package store

import (
	"context"
	"sync"
	"time"
)

// Before contacts (CONTRACT.md, Wave 4), the documents about a person were named after their
// phone number: a plain hash of it (conversations, sender windows, quota shares, marketing
// preferences) or the number itself (members who joined by invite, a contact's choice on a
// shared number). `wapipe migrate` moves them to the ids a contact gives (Migrator); until it
// has run, reads that find nothing under the new id look under the old one, so a person first
// seen by phone before the upgrade is the same person after it. The functions below are the old
// ids, kept only for those reads and for the migration.

// Migrations holds one document per data migration: migrations/{name}, with done_at once it
// completed. It does not expire.
const Migrations = "migrations"

// ContactsMigration names the migration of the documents named after phone numbers.
const ContactsMigration = "contacts-v1"

// migrationDoc is a migrations document.
type migrationDoc struct {
	StartedAt time.Time `firestore:"started_at"`
	DoneAt    time.Time `firestore:"done_at,omitempty"`
	// Moved counts what the last run moved, by kind.
	Moved map[string]int `firestore:"moved,omitempty"`
	// KeyID is the key the ids were made with (keyedid.Keyer.KeyID).
	KeyID string `firestore:"key_id,omitempty"`
}

// legacyCheckEvery is how long a process trusts what it read of the migration marker: a
// migration that completes is seen by every instance within it, and until then the old ids are
// only read, never written.
const legacyCheckEvery = time.Minute

// legacyState caches whether the contacts migration has completed.
type legacyState struct {
	mu      sync.Mutex
	done    bool
	checked time.Time
}

// legacyReads reports whether reads must still look under the old ids: until the migration's
// marker says done. A marker that cannot be read says they must (an extra read is harmless; a
// missed person is not).
func (db *DB) legacyReads(ctx context.Context) bool {
	st := db.legacy
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return false
	}
	now := time.Now()
	if !st.checked.IsZero() && now.Sub(st.checked) < legacyCheckEvery {
		return true
	}
	st.checked = now
	d, err := getDoc[migrationDoc](ctx, db.fs.Collection(Migrations).Doc(ContactsMigration), "migration")
	if err == nil && !d.DoneAt.IsZero() {
		st.done = true
		return false
	}
	return true
}

// forgetMigration makes the next legacyReads read the marker again (tests, and Migrator after it
// writes it).
func (db *DB) forgetMigration() {
	db.legacy.mu.Lock()
	db.legacy.done, db.legacy.checked = false, time.Time{}
	db.legacy.mu.Unlock()
}

// LegacyConversationID is the id conversations had before contacts: an unkeyed hash of the
// tenant, its number and the contact's phone.
func LegacyConversationID(tenantID, phoneNumberID, phone string) string {
	return "conv_" + DocID("conversation\x00" + tenantID + "\x00" + phoneNumberID + "\x00" + phone)[:32]
}

func legacySenderWindowID(tenantID, phone string) string {
	return DocID("sender\x00" + tenantID + "\x00" + phone)
}

func legacyShareID(tenantID, phone, period string) string {
	return DocID("share\x00" + tenantID + "\x00" + phone + "\x00" + period)
}

func legacyPreferenceID(tenantID, phone string) string {
	return DocID("pref\x00" + tenantID + "\x00" + phone)
}
