package devstack_test

import (
	"context"
	"testing"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// TestSampleTenant starts the stack and finds the sample tenant applied: it owns the number the
// sample webhooks use, its send queue exists with its file's rate, and its token is the fake
// Graph API's, sealed with the development key.
func TestSampleTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	host := testenv.FirestoreHost(t)
	st, err := devstack.Start(ctx, devstack.Options{FirestoreHost: host, Project: testenv.ProjectID(t)})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	if len(st.Tenants) != 1 || st.Tenants[0] != "sunrise-bus" {
		t.Fatalf("tenants applied %v, want the sample", st.Tenants)
	}

	db, err := store.OpenEmulator(ctx, st.FirestoreHost, st.Project, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec, err := store.NewTenants(db, store.Options{}).GetByPhoneNumber(ctx, whatsapp.DefaultSampleOptions.PhoneNumberID)
	if err != nil || rec.Tenant.ID != "sunrise-bus" || rec.AuthStatus != store.AuthOK {
		t.Fatalf("the sample webhooks' number routes to %+v (%v), want sunrise-bus with a token", rec.Tenant, err)
	}
	keeper, err := secrets.New(ctx, secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close()
	if tok, err := keeper.Decrypt(ctx, rec.AccessToken, secrets.AD("sunrise-bus", secrets.PurposeAccessToken)); err != nil || string(tok) != devstack.DevAccessToken {
		t.Errorf("sample tenant's token: %v, want the fake Graph API's", err)
	}

	admin, err := taskqueue.NewAdmin(ctx, st.Project, st.Location, st.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	q, err := admin.QueueConfig(ctx, tasks.TenantQueueID("sunrise-bus"))
	if err != nil || q.RateLimits.MaxDispatchesPerSecond != 20 || q.RateLimits.MaxConcurrentDispatches != 2 {
		t.Errorf("sample tenant's queue: %+v, %v", q.RateLimits, err)
	}
}
