package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
)

// TestMigrateEmptyProject: on a project with nothing to carry over, a dry run says so and
// writes nothing, and the migration says it is done.
func TestMigrateEmptyProject(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	args := func(flags ...string) []string {
		return append([]string{"migrate", "--project", e.project}, flags...)
	}
	out, errOut, err := cli(t, args("--dry-run")...)
	if err != nil {
		t.Fatalf("migrate --dry-run: %v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"would move 0 conversations\n", "would move 0 members\n", "contacts to make: 0\n", "dry run: nothing written\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate --dry-run printed:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(out, "done") {
		t.Errorf("a dry run says it is done:\n%s", out)
	}
	if n := e.docs(t, store.Migrations); n != 0 {
		t.Errorf("the dry run wrote %d migration markers", n)
	}
	if !strings.Contains(errOut, "LOG_HASH_KEY is not set") {
		t.Errorf("stderr %q: want the note that the dev key names the ids", errOut)
	}

	out = mustCLI(t, args()...)
	for _, want := range []string{"moved 0 conversations\n", "contacts made: 0\n", "done: the services no longer read the old ids\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate printed:\n%s\nwant %q", out, want)
		}
	}
	if _, _, err := cli(t, args("--rekey")...); exitCode(err) != 2 || !strings.Contains(err.Error(), "LOG_HASH_KEY_PREVIOUS") {
		t.Errorf("migrate --rekey without LOG_HASH_KEY_PREVIOUS: %v, want a usage error naming it", err)
	}
}

// TestMigrateLegacyConversation: a conversation and a membership written as wapipe wrote them
// before contacts (named after the phone) are reported by a dry run, which moves nothing, then
// carried over to the contact's keyed ids by the migration (the conversation keeps its
// messages, and the phone finds it); a second run moves nothing more.
func TestMigrateLegacyConversation(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", writeFile(t, opsTenantFile))...)
	const (
		tenantID = "acme-bus"
		number   = "200"
		phone    = "6281200000009"
	)
	now := time.Now().UTC().Truncate(time.Second)
	legacyID := store.LegacyConversationID(tenantID, number, phone)
	legacy := e.fs.Collection(store.Conversations).Doc(legacyID)
	if _, err := legacy.Set(ctx, store.Conversation{ID: legacyID, TenantID: tenantID, PhoneNumberID: number, Contact: phone,
		ContactName: "Budi", Status: store.ConversationOpen, LastMessageAt: now, LastInboundAt: now,
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now, ExpireAt: now.Add(90 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	const msgID = "wamid.LEGACY-CLI"
	if _, err := legacy.Collection(store.ConversationMessages).Doc(store.DocID(msgID)).Set(ctx, store.Message{Direction: store.DirectionIn,
		MessageID: msgID, Type: "text", Text: "hello", Timestamp: now.Unix(), ReceivedAt: now, Turn: store.TurnDone,
		ExpireAt: now.Add(90 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	members := e.fs.Collection(store.TenantsCollection).Doc(tenantID).Collection(store.TenantMembers)
	if _, err := members.Doc(phone).Set(ctx, map[string]any{"wa_id": phone, "role": "member", "name": "Budi", "joined_at": now,
		"invite": "hash1"}); err != nil {
		t.Fatal(err)
	}
	args := func(flags ...string) []string {
		return append([]string{"migrate", "--project", e.project}, flags...)
	}

	dry := mustCLI(t, args("--dry-run")...)
	for _, want := range []string{"would move 1 conversations\n", "would move 1 members\n", "contacts to make: 1\n", "dry run: nothing written\n"} {
		if !strings.Contains(dry, want) {
			t.Errorf("migrate --dry-run printed:\n%s\nwant %q", dry, want)
		}
	}
	if conv, err := store.NewConversationStore(store.NewDB(e.fs), store.Options{}).Get(ctx, legacyID); err != nil || conv.MovedTo != "" {
		t.Errorf("the dry run moved the conversation: %+v (%v)", conv, err)
	}
	if snap, err := members.Doc(phone).Get(ctx); err != nil || !snap.Exists() {
		t.Errorf("the dry run moved the member (%v)", err)
	}

	out := mustCLI(t, args()...)
	for _, want := range []string{"moved 1 conversations\n", "moved 1 members\n", "contacts made: 1\n", "done: the services no longer read the old ids\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate printed:\n%s\nwant %q", out, want)
		}
	}
	db := store.NewDB(e.fs)
	c, ok, err := store.NewContacts(db, store.Options{}).Find(ctx, tenantID, contact.Identity{WaID: phone})
	if err != nil || !ok {
		t.Fatalf("no contact for the phone after the migration (%v)", err)
	}
	convs := store.NewConversationStore(db, store.Options{})
	newID := store.ConversationID(keyedid.Dev(), tenantID, number, c.ID)
	if got, ok, err := convs.ConversationOf(ctx, tenantID, number, contact.Identity{WaID: phone}); err != nil || !ok || got != newID {
		t.Errorf("the phone's conversation after the migration: %s %v %v, want %s", got, ok, err, newID)
	}
	if m, err := convs.GetMessage(ctx, newID, msgID); err != nil || m.Text != "hello" {
		t.Errorf("the message in the moved conversation: %+v (%v)", m, err)
	}
	if old, err := convs.Get(ctx, legacyID); err != nil || old.MovedTo != newID {
		t.Errorf("the old conversation: moved_to %q (%v), want %s", old.MovedTo, err, newID)
	}
	if m, ok, err := e.tenants.RuntimeMember(ctx, tenantID, c); err != nil || !ok || m.Name != "Budi" {
		t.Errorf("the membership after the migration: %+v %v %v", m, ok, err)
	}

	again := mustCLI(t, args()...)
	for _, want := range []string{"moved 0 conversations\n", "moved 0 members\n", "contacts made: 0\n", "done: the services no longer read the old ids\n"} {
		if !strings.Contains(again, want) {
			t.Errorf("migrate run again printed:\n%s\nwant %q", again, want)
		}
	}
}

// TestMigrateRealDatabaseNeedsTheKey is not parallel: it clears the environment the CLI reads.
// Against a real database (no Firestore emulator), migrate without LOG_HASH_KEY is refused
// before it connects: under the dev key it would name people's documents where no service
// looks, and mark the migration done.
func TestMigrateRealDatabaseNeedsTheKey(t *testing.T) {
	t.Setenv("FIRESTORE_EMULATOR_HOST", "")
	t.Setenv("LOG_HASH_KEY", "")
	t.Setenv("APP_ENV", "")
	for _, flags := range [][]string{nil, {"--dry-run"}} {
		out, _, err := cli(t, append([]string{"migrate", "--project", "wapipe-prod-like"}, flags...)...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "LOG_HASH_KEY") || out != "" {
			t.Errorf("migrate %v on a real database without LOG_HASH_KEY: %v (exit %d), stdout %q; want a usage error naming LOG_HASH_KEY",
				flags, err, exitCode(err), out)
		}
	}
}
