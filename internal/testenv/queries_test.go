package testenv_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestQueryRecorderRecordsShapes runs queries of every kind through a recorder with the
// official client and reads their shapes back; the emulator's REST endpoints pass through.
func TestQueryRecorderRecordsShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	testenv.FirestoreHost(t)
	// In front of the emulator itself: these made-up queries have no index in firestore.tf, and
	// the binary's own recorder must not see them.
	rec := testenv.StartQueryRecorder(t, testenv.EmulatorHost())
	conn, err := grpc.NewClient(rec.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	project := testenv.ProjectID(t)
	fs, err := firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	if _, err := fs.Collection("orders").Doc("o1").Set(ctx, map[string]any{"tenant_id": "t", "created_at": 1, "kind": "k", "at": 1}); err != nil {
		t.Fatal(err)
	}

	orders := fs.Collection("orders")
	queries := []firestore.Query{
		orders.Where("tenant_id", "==", "t").OrderBy("created_at", firestore.Desc).Limit(2),
		fs.CollectionGroup("items").Where("sku", "in", []string{"a", "b"}).Where("price", ">", 1),
		orders.WhereEntity(firestore.OrFilter{Filters: []firestore.EntityFilter{
			firestore.PropertyFilter{Path: "state", Operator: "==", Value: "new"},
			firestore.PropertyFilter{Path: "total", Operator: ">=", Value: 10},
		}}),
	}
	for _, q := range queries {
		if _, err := q.Documents(ctx).GetAll(); err != nil {
			t.Fatal(err)
		}
	}
	byState := orders.Where("state", "==", "new")
	if _, err := byState.NewAggregationQuery().WithCount("n").Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Collection("shards").NewAggregationQuery().WithSum("n", "s").Get(ctx); err != nil {
		t.Fatal(err)
	}
	err = fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		_, err := tx.Documents(orders.Where("tags", "array-contains", "x")).GetAll()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	it := orders.Where("kind", "==", "k").OrderBy("at", firestore.Asc).Snapshots(ctx)
	if _, err := it.Next(); err != nil {
		t.Fatal(err)
	}
	it.Stop()

	want := []testenv.QueryShape{
		{Scope: "COLLECTION", Collection: "orders", Equality: []string{"tenant_id"}, OrderBy: []testenv.FieldOrder{{Field: "created_at", Desc: true}}},
		{Scope: "COLLECTION_GROUP", Collection: "items", Equality: []string{"sku"}, Inequality: []string{"price"}},
		{Scope: "COLLECTION", Collection: "orders", Equality: []string{"state"}, Inequality: []string{"total"}},
		{Scope: "COLLECTION", Collection: "orders", Inequality: []string{"total"}},
		{Scope: "COLLECTION", Collection: "orders", Equality: []string{"state"}},
		{Scope: "COLLECTION", Collection: "shards", Aggregated: []string{"n"}},
		{Scope: "COLLECTION", Collection: "orders", Contains: []string{"tags"}},
		{Scope: "COLLECTION", Collection: "orders", Equality: []string{"kind"}, OrderBy: []testenv.FieldOrder{{Field: "at"}}},
	}
	slices.SortFunc(want, func(a, b testenv.QueryShape) int { return strings.Compare(a.String(), b.String()) })
	var got []testenv.QueryShape
	var callers []string
	for _, q := range rec.Shapes() {
		got = append(got, q.Shape)
		callers = append(callers, q.Callers...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shapes (-want, +got):\n%s", diff)
	}
	if !slices.ContainsFunc(callers, func(c string) bool {
		return strings.Contains(c, "testenv_test.TestQueryRecorderRecordsShapes (internal/testenv/queries_test.go:")
	}) {
		t.Errorf("callers = %q, want this test among them", callers)
	}

	if err := firestoreemu.Reset(ctx, rec.Addr, project); err != nil {
		t.Errorf("the emulator's REST endpoint through the recorder: %v", err)
	}
}
