package console_test

import (
	"testing"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestUseInboundDatabase (issue 21 item 6): pointed at the webhook's own database (service.Start's
// InboundDB with INBOUND_FIRESTORE_DATABASE set), the console's inspector finds the dedupe markers
// there; pointed at the main database (InboundDB without it), it finds none.
func TestUseInboundDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	project := testenv.ProjectID(t)
	webhookDB := testenv.StoreDatabase(t, project, "wapipe-inbound")
	const eventID = "wamid.console-inbound-db"
	if _, err := store.NewMarkers(webhookDB, store.MarkerOptions{}).MarkIfNew(ctx, eventID, "corr-1"); err != nil {
		t.Fatalf("MarkIfNew: %v", err)
	}

	mainDB := testenv.StoreDatabase(t, project, "(default)")
	mainMarkers := store.NewMarkers(mainDB, store.MarkerOptions{})
	for _, tc := range []struct {
		name      string
		db        *store.DB
		wantFound bool
	}{
		{"own database", webhookDB, true},
		{"one database", mainDB, false},
	} {
		inspector := &operator.Inspector{Markers: mainMarkers}
		deps := console.Deps{Inspector: inspector}
		cfg := &console.Config{Base: config.Base{ProjectID: project, FirestoreDatabase: "(default)", AppEnv: config.EnvDev}}
		cfg.UseInboundDatabase(tc.db, &deps)
		m, err := inspector.Markers.Get(ctx, eventID)
		if found := err == nil && m.CorrelationID == "corr-1"; found != tc.wantFound {
			t.Errorf("%s: marker found = %v (%v), want %v", tc.name, found, err, tc.wantFound)
		}
	}
}
