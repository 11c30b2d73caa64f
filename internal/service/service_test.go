package service_test

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// base is a dev configuration on the test's own project and Cloud Tasks emulator.
func base(t *testing.T) *config.Base {
	t.Helper()
	project := testenv.ProjectID(t)
	emu, _ := testenv.Tasks(t, project, "us-central1", nil)
	return &config.Base{AppEnv: config.EnvDev, ProjectID: project, FirestoreDatabase: "(default)",
		TasksEmulatorHost: emu.Addr(), TasksLocation: "us-central1", InternalTaskBaseURL: "http://127.0.0.1:1",
		InternalTaskToken: "dev-internal-token", LogLevel: "INFO", TraceExporter: "none", TraceSampleRatio: 1}
}

// TestStart: Start builds exactly the clients asked for, against the emulators, and they work:
// a marker is written through the store, a queue's stats are read through the admin client, the
// keeper seals and opens; cleanup closes them all.
func TestStart(t *testing.T) {
	t.Parallel()
	host := testenv.FirestoreHost(t)
	tests := []struct {
		name string
		opts service.Options
	}{
		{"firestore only", service.Options{}},
		{"every client", service.Options{Tasks: true, Admin: true, Keeper: service.Keeper(secrets.Config{Dev: true})}},
		{"emulator named, in process", service.Options{FirestoreEmulatorHost: host, InProcess: true, Tasks: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := tc.opts
			o.Name, o.Base = "test", base(t)
			o.Logger = logging.New(io.Discard, logging.Options{})
			c, cleanup, err := service.Start(ctx, o)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer cleanup()
			if isNew, err := store.NewMarkers(c.DB, store.MarkerOptions{}).MarkIfNew(ctx, "wamid.start", "corr"); err != nil || !isNew {
				t.Errorf("MarkIfNew through the started store = %v, %v; want true, nil", isNew, err)
			}
			if (c.Tasks != nil) != o.Tasks || (c.Admin != nil) != o.Admin || (c.Keeper != nil) != (o.Keeper != nil) {
				t.Errorf("clients built: tasks %v admin %v keeper %v; asked tasks %v admin %v keeper %v",
					c.Tasks != nil, c.Admin != nil, c.Keeper != nil, o.Tasks, o.Admin, o.Keeper != nil)
			}
			if c.Admin != nil {
				if _, err := c.Admin.QueueStats(ctx, tasks.InboundQueueID); err != nil {
					t.Errorf("QueueStats through the started admin client: %v", err)
				}
			}
			if c.Keeper != nil {
				ad := secrets.AD("tenant", secrets.PurposeActionSecret)
				sealed, err := c.Keeper.Encrypt(ctx, []byte("s3cret"), ad)
				if err != nil {
					t.Fatalf("Encrypt: %v", err)
				}
				if got, err := c.Keeper.Decrypt(ctx, sealed, ad); err != nil || string(got) != "s3cret" {
					t.Errorf("Decrypt = %q, %v", got, err)
				}
			}
		})
	}
}

// TestStartFails: a client that cannot be built fails Start with the error that names it, and
// nothing is returned to close.
func TestStartFails(t *testing.T) {
	t.Parallel()
	testenv.FirestoreHost(t)
	errKeeper := errors.New("keeper refused")
	b := base(t)
	c, cleanup, err := service.Start(context.Background(), service.Options{Name: "test", Base: b, Tasks: true,
		Logger: logging.New(io.Discard, logging.Options{}),
		Keeper: func(context.Context) (*secrets.Keeper, error) { return nil, errKeeper }})
	if !errors.Is(err, errKeeper) || c != nil || cleanup != nil {
		t.Fatalf("Start with a failing keeper = %v, %v, cleanup set %v; want the keeper's error and nothing", c, err, cleanup != nil)
	}
}

// TestStartInboundDatabase (issue 21 item 6): with INBOUND_FIRESTORE_DATABASE set, InboundDB is the
// webhook's own database, where it stored an out-of-band payload (the main database does not
// have it); without it, or without Options.InboundDatabase, InboundDB is DB.
func TestStartInboundDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const inbound = "wapipe-inbound"
	b := base(t)
	b.InboundFirestoreDatabase = inbound
	body := []byte(`{"object":"whatsapp_business_account","entry":[]}`)
	ref, err := store.NewPayloads(testenv.StoreDatabase(t, b.ProjectID, inbound), time.Hour).Put(ctx, "wamid.inbound-db", body)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	quiet := logging.New(io.Discard, logging.Options{})

	c, cleanup, err := service.Start(ctx, service.Options{Name: "test", Base: b, Logger: quiet, InboundDatabase: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer cleanup()
	if got, err := store.NewPayloads(c.InboundDB, 0).Get(ctx, ref); err != nil || string(got) != string(body) {
		t.Fatalf("Get from InboundDB = %q, %v; want the stored payload", got, err)
	}
	if _, err := store.NewPayloads(c.DB, 0).Get(ctx, ref); err == nil {
		t.Error("the main database has the payload too; want it only in the webhook's")
	}

	one := base(t)
	for _, o := range []service.Options{
		{Name: "test", Base: one, Logger: quiet, InboundDatabase: true},
		{Name: "test", Base: b, Logger: quiet},
	} {
		c, cleanup, err := service.Start(ctx, o)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if c.InboundDB != c.DB {
			t.Errorf("InboundDB is another database with %q and InboundDatabase %v; want DB", o.Base.InboundFirestoreDatabase, o.InboundDatabase)
		}
		cleanup()
	}
}
