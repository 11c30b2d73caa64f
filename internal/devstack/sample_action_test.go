package devstack_test

import (
	"context"
	"testing"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestSampleActionURLFollowsTheFake: the sample tenant's action_url names the fake action
// endpoint wherever it listens, not the sample file's default port.
func TestSampleActionURLFollowsTheFake(t *testing.T) {
	host := testenv.FirestoreHost(t)
	_, project := testenv.Firestore(t)
	ctx := context.Background()
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: host, Project: project, Queues: testenv.FastQueues(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	if len(st.Tenants) != 1 {
		t.Fatalf("tenants applied: %v, want the sample", st.Tenants)
	}
	db, err := store.OpenEmulator(ctx, host, project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := store.NewTenants(db, store.Options{}).Get(ctx, st.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Tenant.Assistant.ActionURL; got != st.ActionURL {
		t.Errorf("the sample tenant's action_url = %q, want the fake's %q", got, st.ActionURL)
	}
}
