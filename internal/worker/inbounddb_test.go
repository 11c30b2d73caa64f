package worker_test

import (
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/worker"
)

// TestUseInboundDatabase (issue 21 item 6): with INBOUND_FIRESTORE_DATABASE set, the worker reads
// out-of-band payloads from the webhook's own database, where the webhook stored them (and the
// main database does not have them); without it nothing changes.
func TestUseInboundDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	project := testenv.ProjectID(t)
	const inbound = "wapipe-inbound"
	webhookDB := testenv.StoreDatabase(t, project, inbound)
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	ref, err := store.NewPayloads(webhookDB, time.Hour).Put(ctx, "wamid.inbound-db", body)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}

	cfg := &worker.Config{Base: config.Base{ProjectID: project, FirestoreDatabase: "(default)", InboundFirestoreDatabase: inbound}}
	var deps worker.Deps
	closeInbound, err := cfg.UseInboundDatabase(ctx, &deps)
	if err != nil {
		t.Fatalf("UseInboundDatabase: %v", err)
	}
	defer closeInbound()
	if deps.Payloads == nil {
		t.Fatal("deps.Payloads not set")
	}
	got, err := deps.Payloads.Get(ctx, ref)
	if err != nil || string(got) != string(body) {
		t.Fatalf("Get = %q, %v; want the stored payload", got, err)
	}

	mainDB := testenv.StoreDatabase(t, project, "(default)")
	if _, err := store.NewPayloads(mainDB, 0).Get(ctx, ref); err == nil {
		t.Error("the main database has the payload too; want it only in the webhook's")
	}

	// One database: the payload reader NewDeps made stays.
	same := &worker.Config{Base: config.Base{ProjectID: project, FirestoreDatabase: "(default)"}}
	mainPayloads := store.NewPayloads(mainDB, 0)
	deps = worker.Deps{Payloads: mainPayloads}
	closeSame, err := same.UseInboundDatabase(ctx, &deps)
	if err != nil {
		t.Fatal(err)
	}
	closeSame()
	if deps.Payloads != mainPayloads {
		t.Error("UseInboundDatabase replaced the payload reader with one database")
	}
}
