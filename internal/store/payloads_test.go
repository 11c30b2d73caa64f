package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

func TestPayloadsRoundTrip(t *testing.T) {
	t.Parallel()
	fs, _ := testenv.Firestore(t)
	p := store.NewPayloads(store.NewDB(fs), time.Hour)
	ctx := context.Background()
	for _, size := range []int{1, 768 * 1024, 768*1024 + 1, 3 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			body := make([]byte, size)
			r := rand.New(rand.NewPCG(uint64(size), 1))
			for i := range body {
				body[i] = byte(r.UintN(256))
			}
			event := fmt.Sprintf("wamid.big/%d", size)
			ref, err := p.Put(ctx, event, body)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			got, err := p.Get(ctx, ref)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("Get returned %d bytes that differ from the %d stored", len(got), len(body))
			}
			chunks, err := fs.Collection(store.InboundEvents).Doc(store.DocID(event)).Collection(store.PayloadChunks).Documents(ctx).GetAll()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunks {
				if _, err := c.DataAt(store.ExpireAtField); err != nil {
					t.Errorf("chunk %s has no %s: %v", c.Ref.ID, store.ExpireAtField, err)
				}
			}
		})
	}
}

func TestPayloadsBadRef(t *testing.T) {
	t.Parallel()
	db, _ := testenv.Store(t)
	p := store.NewPayloads(db, time.Hour)
	for _, ref := range []string{"", "inbound_events/x", "firestore://dead_letters/x"} {
		if _, err := p.Get(context.Background(), ref); !errors.Is(err, store.ErrBadRef) {
			t.Errorf("Get(%q) = %v, want ErrBadRef", ref, err)
		}
	}
	if _, err := p.Get(context.Background(), "firestore://inbound_events/none"); err == nil {
		t.Error("Get(missing payload) succeeded")
	}
}

// TestMalformedPayloadRef: a payload_ref of any other form than Put's is refused with ErrBadRef,
// never a panic (the client library builds no document for a path with an odd number of
// segments, and the old check let such paths through).
func TestMalformedPayloadRef(t *testing.T) {
	t.Parallel()
	db, _ := testenv.Store(t)
	p := store.NewPayloads(db, time.Hour)
	id := store.DocID("wamid.x")
	for _, ref := range []string{
		"",
		"firestore://",
		"firestore://inbound_events",
		"firestore://inbound_events/",
		"firestore://inbound_events//",
		"firestore://inbound_events/a/b",
		"firestore://inbound_events/" + id + "/payload_chunks",
		"firestore://inbound_events/" + id + "/",
		"firestore://inbound_events/" + strings.ToUpper(id),
		"firestore://inbound_events/" + id[:63],
		"firestore://inbound_events/../" + id,
		"firestore://dead_letters/" + id,
		"gs://inbound_events/" + id,
	} {
		t.Run(ref, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Get(context.Background(), ref); !errors.Is(err, store.ErrBadRef) {
				t.Errorf("Get(%q) = %v, want ErrBadRef", ref, err)
			}
		})
	}
	if _, err := store.CheckPayloadRef("firestore://inbound_events/" + id); err != nil {
		t.Errorf("the form Put makes is refused: %v", err)
	}
}
