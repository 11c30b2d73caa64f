package testenv_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// TestOpCounterCountsWritesPerDocument writes through the proxy and reads its counts: every
// successful write per document (a set, an increment, a delete), none for a create that lost
// to an existing document, and the operations as Firestore bills them.
func TestOpCounterCountsWritesPerDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := testenv.StartOpCounter(t, testenv.FirestoreHost(t))
	conn, err := grpc.NewClient(counter.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := firestore.NewClient(ctx, testenv.ProjectID(t), option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })

	hot, cold := fs.Collection("counters").Doc("hot"), fs.Collection("counters").Doc("cold").Collection("parts").Doc("p1")
	for range 3 {
		if _, err := hot.Set(ctx, map[string]any{"n": firestore.Increment(1)}, firestore.MergeAll); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hot.Create(ctx, map[string]any{"n": 0}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("Create of an existing document: %v, want AlreadyExists", err)
	}
	if _, err := cold.Set(ctx, map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cold.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cold.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Collection("nothing").Documents(ctx).GetAll(); err != nil {
		t.Fatal(err)
	}

	got := counter.Writes()
	for i := range got {
		got[i].Peak = 0 // the seconds the writes fell in are the machine's
	}
	want := []testenv.DocWrites{
		{Name: "counters/hot", Pattern: "counters/{id}", Writes: 3},
		{Name: "counters/cold/parts/p1", Pattern: "counters/{id}/parts/{id}", Writes: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Writes (-want, +got):\n%s", diff)
	}
	ops := counter.TakeOps()
	if ops.Writes != 4 || ops.Deletes != 1 || ops.Reads != 2 {
		t.Errorf("ops = %d writes, %d deletes, %d reads; want 4, 1 and 2 (a get, an empty query)", ops.Writes, ops.Deletes, ops.Reads)
	}
	if again := counter.TakeOps(); again.Writes+again.Reads+again.Deletes != 0 {
		t.Errorf("TakeOps after TakeOps = %+v, want nothing", again)
	}
	table := testenv.WritesTable(counter.Writes(), time.Second, 1)
	if !strings.Contains(table, "counters/hot") || !strings.Contains(table, "… 1 more documents") {
		t.Errorf("WritesTable:\n%s\nwant counters/hot, then the count of the rest", table)
	}
}

func TestDocPattern(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, want string }{
		{"usage/acme_2026-11", "usage/{id}"},
		{"usage/acme_2026-11/shards/07", "usage/{id}/shards/{id}"},
		{"conversations/conv_1/messages/wamid.x", "conversations/{id}/messages/{id}"},
	}
	for _, tc := range tests {
		if got := testenv.DocPattern(tc.name); got != tc.want {
			t.Errorf("DocPattern(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
