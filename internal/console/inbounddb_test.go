package console_test

import (
	"testing"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestUseInboundDatabase (issue 21 item 6): with INBOUND_FIRESTORE_DATABASE set, the console's
// inspector finds the dedupe markers in the webhook's own database; without it nothing changes.
func TestUseInboundDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	project := testenv.ProjectID(t)
	const inbound = "wapipe-inbound"
	webhookDB := testenv.StoreDatabase(t, project, inbound)
	const eventID = "wamid.console-inbound-db"
	if _, err := store.NewMarkers(webhookDB, store.MarkerOptions{}).MarkIfNew(ctx, eventID, "corr-1"); err != nil {
		t.Fatalf("MarkIfNew: %v", err)
	}

	mainDB := testenv.StoreDatabase(t, project, "(default)")
	mainMarkers := store.NewMarkers(mainDB, store.MarkerOptions{})
	for _, tc := range []struct {
		name, inbound string
		wantFound     bool
	}{
		{"own database", inbound, true},
		{"one database", "", false},
	} {
		inspector := &operator.Inspector{Markers: mainMarkers}
		deps := console.Deps{Inspector: inspector}
		cfg := &console.Config{Base: config.Base{ProjectID: project, FirestoreDatabase: "(default)", InboundFirestoreDatabase: tc.inbound, AppEnv: config.EnvDev}}
		closeInbound, err := cfg.UseInboundDatabase(ctx, &deps)
		if err != nil {
			t.Fatalf("%s: UseInboundDatabase: %v", tc.name, err)
		}
		m, err := inspector.Markers.Get(ctx, eventID)
		closeInbound()
		if found := err == nil && m.CorrelationID == "corr-1"; found != tc.wantFound {
			t.Errorf("%s: marker found = %v (%v), want %v", tc.name, found, err, tc.wantFound)
		}
	}
}
