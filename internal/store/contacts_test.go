package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

const (
	agusPhone = "6281234567890"
	agusUser  = "ID.13491208655302741918"
	newUser   = "ID.99991208655302741918"
)

// contactStores are the stores these tests use, on one database.
type contactStores struct {
	fs       *firestore.Client
	db       *store.DB
	contacts *store.Contacts
	tenants  *store.Tenants
	convs    *store.ConversationStore
	clk      *clock
}

func newContactStores(t *testing.T) contactStores {
	t.Helper()
	fs, _ := testenv.Firestore(t)
	db := store.NewDB(fs)
	clk := &clock{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	opts := store.Options{Now: clk.Now}
	return contactStores{fs, db, store.NewContacts(db, opts), store.NewTenants(db, opts), store.NewConversationStore(db, opts), clk}
}

// resolve resolves id for tenantID and fails the test on an error.
func (s contactStores) resolve(t *testing.T, tenantID string, id contact.Identity) store.Resolution {
	t.Helper()
	res, err := s.contacts.Resolve(context.Background(), tenantID, id)
	if err != nil {
		t.Fatalf("Resolve(%+v): %v", id, err)
	}
	return res
}

// find finds id in tenantID; "" when nobody.
func (s contactStores) find(t *testing.T, tenantID string, id contact.Identity) string {
	t.Helper()
	c, ok, err := s.contacts.Find(context.Background(), tenantID, id)
	if err != nil {
		t.Fatalf("Find(%+v): %v", id, err)
	}
	if !ok {
		return ""
	}
	return c.ID
}

// TestResolveFindsOnePersonByEitherIdentifier: a person is one contact whichever identifier
// arrives, aliases are added as they arrive, and the contact is per tenant.
func TestResolveFindsOnePersonByEitherIdentifier(t *testing.T) {
	t.Parallel()
	s := newContactStores(t)
	first := s.resolve(t, "acme", contact.Identity{UserID: agusUser, Username: "agus", Name: "Agus"})
	if !first.Created || !strings.HasPrefix(first.Contact.ID, store.ContactIDPrefix) {
		t.Fatalf("first resolution = %+v; want a new ct_ contact", first)
	}
	again := s.resolve(t, "acme", contact.Identity{UserID: agusUser})
	if again.Created || again.Contact.ID != first.Contact.ID {
		t.Errorf("the same BSUID made another contact: %+v", again)
	}
	both := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: agusUser})
	if both.Contact.ID != first.Contact.ID || both.Contact.WaID != agusPhone || both.Contact.Username != "agus" {
		t.Errorf("phone and BSUID together = %+v; want the same contact, the phone added, the username kept", both.Contact)
	}
	if got := s.find(t, "acme", contact.Identity{WaID: agusPhone}); got != first.Contact.ID {
		t.Errorf("the phone alone finds %q, want %q", got, first.Contact.ID)
	}
	if got := s.find(t, "other", contact.Identity{WaID: agusPhone}); got != "" {
		t.Errorf("another tenant finds %q: contacts are per tenant", got)
	}
	if _, err := s.contacts.Resolve(context.Background(), "acme", contact.Identity{Username: "agus", Name: "Agus"}); err == nil {
		t.Error("an identity with no identifier (a username is not one) resolved")
	}
	if ids := aliasDocIDs(t, s.fs, "acme"); len(ids) != 2 {
		t.Errorf("alias documents %v, want one per identifier and none for a username", ids)
	}
}

// TestResolveConcurrentFirstMessages: the first messages of a new person, processed at once,
// make one contact.
func TestResolveConcurrentFirstMessages(t *testing.T) {
	t.Parallel()
	s := newContactStores(t)
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.contacts.Resolve(context.Background(), "acme", contact.Identity{UserID: agusUser})
			if err != nil {
				t.Errorf("Resolve: %v", err)
				return
			}
			ids[i] = res.Contact.ID
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent first messages made several contacts: %v", ids)
		}
	}
}

// TestResolveMergesIntoTheOlder: a person first known by phone (before their username) and
// then by BSUID alone has two contacts until a message carries both: they merge into the older,
// and either identifier finds it from then on.
func TestResolveMergesIntoTheOlder(t *testing.T) {
	t.Parallel()
	s := newContactStores(t)
	byPhone := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, Name: "Agus"}).Contact
	s.clk.Add(time.Hour)
	byUser := s.resolve(t, "acme", contact.Identity{UserID: agusUser, Username: "agus"}).Contact
	if byPhone.ID == byUser.ID {
		t.Fatal("a phone and a BSUID never seen together made one contact")
	}
	s.clk.Add(time.Hour)
	res := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: agusUser})
	if res.Contact.ID != byPhone.ID {
		t.Errorf("merged into %s, want the older %s", res.Contact.ID, byPhone.ID)
	}
	if len(res.Absorbed) != 1 || res.Absorbed[0].ID != byUser.ID {
		t.Errorf("absorbed %+v, want the BSUID's contact", res.Absorbed)
	}
	if res.Contact.Username != "agus" || res.Contact.Name != "Agus" || res.Contact.UserID != agusUser {
		t.Errorf("survivor = %+v; want the absorbed contact's username and BSUID kept", res.Contact)
	}
	for _, id := range []contact.Identity{{WaID: agusPhone}, {UserID: agusUser}} {
		if got := s.find(t, "acme", id); got != byPhone.ID {
			t.Errorf("Find(%+v) = %s, want the survivor %s", id, got, byPhone.ID)
		}
	}
	if got, err := s.contacts.Get(context.Background(), "acme", byUser.ID); err != nil || got.ID != byPhone.ID {
		t.Errorf("Get(absorbed) = %+v, %v; want the survivor", got, err)
	}
}

// TestChangeIdentity: a change of number keeps the contact (its id), detaches the old phone so
// that whoever gets the number next is a stranger, and is idempotent; a late message from the
// previous BSUID still finds the contact without undoing the change.
func TestChangeIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newContactStores(t)
	c := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: agusUser}).Contact
	const newPhone = "6289999999999"
	prev := contact.Identity{WaID: agusPhone, UserID: agusUser}
	cur := contact.Identity{WaID: newPhone, UserID: newUser}
	for round := 0; round < 2; round++ {
		mv, err := s.contacts.ChangeIdentity(ctx, "acme", prev, cur, true)
		if err != nil {
			t.Fatal(err)
		}
		if !mv.Found || mv.Contact.ID != c.ID || mv.Contact.WaID != newPhone || mv.Contact.UserID != newUser {
			t.Errorf("round %d: ChangeIdentity = %+v; want the same contact with the new phone and BSUID", round, mv)
		}
		if round == 0 && mv.DetachedPhone != agusPhone {
			t.Errorf("detached phone %q, want the old one", mv.DetachedPhone)
		}
	}
	if got := s.find(t, "acme", contact.Identity{WaID: agusPhone}); got != "" {
		t.Errorf("the old phone still finds %s", got)
	}
	if got := s.find(t, "acme", contact.Identity{UserID: newUser}); got != c.ID {
		t.Errorf("the new BSUID finds %q, want %s", got, c.ID)
	}
	late := s.resolve(t, "acme", contact.Identity{UserID: agusUser})
	if late.Contact.ID != c.ID || late.Contact.UserID != newUser {
		t.Errorf("a late message from the previous BSUID = %+v; want the contact, its current BSUID kept", late.Contact)
	}
	stranger := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: "ID.55501208655302741918"})
	if !stranger.Created || stranger.Contact.ID == c.ID {
		t.Errorf("whoever has the old number next = %+v; want a new contact", stranger)
	}
	if mv, err := s.contacts.ChangeIdentity(ctx, "other", prev, cur, true); err != nil || mv.Found {
		t.Errorf("a tenant that never knew the person: %+v, %v; want nothing found", mv, err)
	}
}

// TestAliasIDsAreKeyed: the documents that find a person are named by HMACs under a key derived
// from LOG_HASH_KEY: nothing in their ids can be recomputed from a phone number without the key.
func TestAliasIDsAreKeyed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newContactStores(t)
	c := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: agusUser}).Contact
	ids := aliasDocIDs(t, s.fs, "acme")
	if len(ids) != 2 {
		t.Fatalf("alias documents %v, want one per identifier", ids)
	}
	for _, id := range ids {
		for _, v := range []string{agusPhone, agusUser} {
			plain := sha256.Sum256([]byte(v))
			if strings.Contains(id, v) || strings.Contains(id, hex.EncodeToString(plain[:])[:16]) {
				t.Errorf("alias id %s holds %s or its plain hash", id, v)
			}
		}
	}
	conv := store.ConversationID(s.db.Keyer(), "acme", "pn1", c.ID)
	h, err := logging.NewHasher("another-key-of-at-least-thirty-two-bytes!")
	if err != nil {
		t.Fatal(err)
	}
	if conv == store.ConversationID(keyedid.New(h), "acme", "pn1", c.ID) {
		t.Error("a conversation id does not depend on the key")
	}
	// Another key finds nobody, until the previous key is known (a rotation).
	other := store.NewDB(s.fs)
	other.SetKeyer(keyedid.New(h))
	if _, ok, _ := store.NewContacts(other, store.Options{}).Find(ctx, "acme", contact.Identity{WaID: agusPhone}); ok {
		t.Error("another key found the contact")
	}
	other.SetKeyer(keyedid.New(h).WithPrevious(keyedid.Dev()))
	if got, ok, _ := store.NewContacts(other, store.Options{}).Find(ctx, "acme", contact.Identity{WaID: agusPhone}); !ok || got.ID != c.ID {
		t.Error("during a rotation the previous key's aliases are not read")
	}
}

// TestLocateFallsBackToTheLegacyConversation: until the migration has run, the conversation a
// phone had before contacts goes on; after it (or once the new one exists), the new id.
func TestLocateFallsBackToTheLegacyConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newContactStores(t)
	c := s.resolve(t, "acme", contact.Identity{WaID: agusPhone}).Contact
	newID := store.ConversationID(s.db.Keyer(), "acme", "pn1", c.ID)
	if got, err := s.convs.Locate(ctx, "acme", "pn1", c); err != nil || got != newID {
		t.Errorf("no conversation yet: Locate = %q, %v; want the new id", got, err)
	}
	legacy := store.LegacyConversationID("acme", "pn1", agusPhone)
	if _, _, err := s.convs.Acquire(ctx, legacy, "h", time.Minute, &store.Touch{TenantID: "acme", PhoneNumberID: "pn1", Contact: agusPhone}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.convs.Locate(ctx, "acme", "pn1", c); got != legacy {
		t.Errorf("a conversation from before contacts: Locate = %q, want it (%s)", got, legacy)
	}
	if byUser, _ := s.convs.Locate(ctx, "acme", "pn1", store.Contact{ID: c.ID, Identity: contact.Identity{UserID: agusUser}}); byUser != newID {
		t.Errorf("a contact without a phone has no legacy conversation: %q", byUser)
	}
}

// aliasDocIDs lists the ids of tenantID's alias documents.
func aliasDocIDs(t *testing.T, fs *firestore.Client, tenantID string) []string {
	t.Helper()
	refs, err := fs.Collection(store.TenantsCollection).Doc(tenantID).Collection(store.ContactAliases).DocumentRefs(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids
}

// TestMergeTakesTheMessagesIdentifiers: when a message merges two contacts, the identifiers it
// carries are the survivor's current ones, even those it knew only through the absorbed contact
// (a new BSUID first seen alone); a previous BSUID of the survivor itself never comes back.
func TestMergeTakesTheMessagesIdentifiers(t *testing.T) {
	t.Parallel()
	s := newContactStores(t)
	older := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: agusUser}).Contact
	s.clk.Add(time.Hour)
	s.resolve(t, "acme", contact.Identity{UserID: newUser})
	s.clk.Add(time.Hour)
	res := s.resolve(t, "acme", contact.Identity{WaID: agusPhone, UserID: newUser})
	if res.Contact.ID != older.ID || res.Contact.UserID != newUser || len(res.Absorbed) != 1 {
		t.Errorf("merge = %+v; want the older contact with the message's BSUID %s", res, newUser)
	}
	if late := s.resolve(t, "acme", contact.Identity{UserID: agusUser}); late.Contact.ID != older.ID || late.Contact.UserID != newUser {
		t.Errorf("a late message from the previous BSUID = %+v; want the current one kept", late.Contact)
	}
}
