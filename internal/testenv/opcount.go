package testenv

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// OpCounter is a gRPC proxy in front of the Firestore emulator that counts what passes through
// it: the operations as Firestore bills them (Ops), and the writes per document and per second
// since it started (Writes), to find hot documents: Firestore sustains about one write a second
// on one document. A write counts once its commit succeeded (a compare-and-set that lost its
// race wrote nothing); a transform (an increment) is a write of its document.
type OpCounter struct {
	// Addr is the proxy's host:port, the FIRESTORE_EMULATOR_HOST of the code it counts.
	Addr string

	start time.Time
	mu    sync.Mutex
	docs  map[string]map[int]int // document name → second since start → writes
	ops   Ops
}

// Ops are Firestore operations as Firestore bills them: a write per document written (by a
// commit, a transaction's or not), a delete per document deleted (billed apart, at a lower
// price), a read per document a get returns or misses and per document a query returns (at
// least one per query), one per aggregation query (up to 1,000 index entries).
type Ops struct {
	Writes, Reads, Deletes int
	// RPCs counts the calls by method ("Commit"), for a log.
	RPCs map[string]int
}

// DocWrites are the writes of one document.
type DocWrites struct {
	// Name is the document's path below the database ("usage/acme_2026-11").
	Name string
	// Pattern is Name with its ids replaced by {id} ("usage/{id}").
	Pattern string
	Writes  int
	// Peak is the most writes in one second (seconds counted from the proxy's start).
	Peak int
}

// StartOpCounter serves an OpCounter in front of the Firestore emulator at target until the
// test ends.
func StartOpCounter(t testing.TB, target string) *OpCounter {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatalf("dial the Firestore emulator: %v", err)
	}
	c := &OpCounter{start: time.Now(), docs: map[string]map[int]int{}, ops: Ops{RPCs: map[string]int{}}}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(c.forward(conn)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the Firestore proxy: %v", err)
	}
	c.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); conn.Close() })
	return c
}

// forward relays every call to conn, counting the reads of the answers and the writes of the
// commits that succeed.
func (c *OpCounter) forward(conn *grpc.ClientConn) grpc.StreamHandler {
	// The counted methods are unary: their one request is in hand before their answer. The
	// writes of a call are counted once its answer shows the commit succeeded.
	type call struct {
		mu      sync.Mutex
		pending []write
		reads   int
	}
	return func(srv any, ss grpc.ServerStream) error {
		cl := &call{}
		return relay(conn, relayHooks{
			onCall: c.rpc,
			onRequest: func(method string, m []byte) {
				if ws := writtenDocs(method, m); len(ws) > 0 {
					cl.mu.Lock()
					cl.pending = append(cl.pending, ws...)
					cl.mu.Unlock()
				}
			},
			onAnswer: func(method string, m []byte) {
				cl.mu.Lock()
				done := cl.pending
				cl.pending = nil
				cl.mu.Unlock()
				c.count(done)
				n := readsOf(method, m)
				cl.reads += n
				c.read(n)
			},
			onEnd: func(method string) {
				if cl.reads == 0 && strings.HasSuffix(method, "/RunQuery") {
					c.read(1) // a query that returns nothing is billed one read
				}
			},
		})(srv, ss)
	}
}

// write is one document a commit writes or deletes.
type write struct {
	name   string
	delete bool
}

// writtenDocs are the documents a Commit or BatchWrite request writes or deletes.
func writtenDocs(method string, b []byte) []write {
	var ws []*firestorepb.Write
	switch {
	case strings.HasSuffix(method, "/Commit"):
		var r firestorepb.CommitRequest
		if proto.Unmarshal(b, &r) == nil {
			ws = r.Writes
		}
	case strings.HasSuffix(method, "/BatchWrite"):
		var r firestorepb.BatchWriteRequest
		if proto.Unmarshal(b, &r) == nil {
			ws = r.Writes
		}
	}
	out := make([]write, 0, len(ws))
	for _, w := range ws {
		name := w.GetUpdate().GetName()
		if name == "" {
			name = w.GetTransform().GetDocument()
		}
		del := name == "" && w.GetDelete() != ""
		if del {
			name = w.GetDelete()
		}
		if _, rel, ok := strings.Cut(name, "/documents/"); ok {
			out = append(out, write{rel, del})
		}
	}
	return out
}

// readsOf counts the reads of one answer of method.
func readsOf(method string, b []byte) int {
	switch {
	case strings.HasSuffix(method, "/GetDocument"), strings.HasSuffix(method, "/BatchGetDocuments"),
		strings.HasSuffix(method, "/RunAggregationQuery"):
		return 1
	case strings.HasSuffix(method, "/RunQuery"):
		var r firestorepb.RunQueryResponse
		if proto.Unmarshal(b, &r) == nil && r.Document != nil {
			return 1
		}
	}
	return 0
}

func (c *OpCounter) count(ws []write) {
	if len(ws) == 0 {
		return
	}
	sec := int(time.Since(c.start) / time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		if c.docs[w.name] == nil {
			c.docs[w.name] = map[int]int{}
		}
		c.docs[w.name][sec]++
		if w.delete {
			c.ops.Deletes++
		} else {
			c.ops.Writes++
		}
	}
}

func (c *OpCounter) read(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops.Reads += n
}

func (c *OpCounter) rpc(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops.RPCs[method[strings.LastIndex(method, "/")+1:]]++
}

// TakeOps returns the operations counted since the start, the last Reset or the last TakeOps,
// and starts afresh (the writes per document are kept).
func (c *OpCounter) TakeOps() Ops {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.ops
	c.ops = Ops{RPCs: map[string]int{}}
	return got
}

// Reset forgets everything counted so far (a stack's start-up, say).
func (c *OpCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs = map[string]map[int]int{}
	c.ops = Ops{RPCs: map[string]int{}}
}

// Writes lists every document written since the start or the last Reset, the most written
// first (then by name).
func (c *OpCounter) Writes() []DocWrites {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]DocWrites, 0, len(c.docs))
	for name, secs := range c.docs {
		d := DocWrites{Name: name, Pattern: DocPattern(name)}
		for _, n := range secs {
			d.Writes += n
			d.Peak = max(d.Peak, n)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b DocWrites) int {
		if a.Writes != b.Writes {
			return b.Writes - a.Writes
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// DocPattern replaces the ids of a document path with {id}: "conversations/x/messages/y" →
// "conversations/{id}/messages/{id}".
func DocPattern(name string) string {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = "{id}"
	}
	return strings.Join(parts, "/")
}

// WritesTable renders docs (the first top of them) as a table with each one's sustained rate
// over d: its writes divided by d.
func WritesTable(docs []DocWrites, d time.Duration, top int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %-44s %7s %12s %9s\n", "pattern", "document", "writes", "sustained/s", "peak/s")
	for i, w := range docs {
		if i == top {
			fmt.Fprintf(&b, "… %d more documents\n", len(docs)-top)
			break
		}
		fmt.Fprintf(&b, "%-34s %-44s %7d %12.2f %9d\n", w.Pattern, shorten(w.Name, 44), w.Writes, float64(w.Writes)/d.Seconds(), w.Peak)
	}
	return b.String()
}

// PatternTable sums docs by pattern: how many documents, their writes, and the most written
// one's writes, sustained rate over d and busiest second; the busiest pattern first.
func PatternTable(docs []DocWrites, d time.Duration) string {
	type agg struct {
		pattern                  string
		docs, writes, most, peak int
	}
	byPattern := map[string]*agg{}
	var order []*agg
	for _, w := range docs {
		a := byPattern[w.Pattern]
		if a == nil {
			a = &agg{pattern: w.Pattern}
			byPattern[w.Pattern] = a
			order = append(order, a)
		}
		a.docs++
		a.writes += w.Writes
		a.most = max(a.most, w.Writes)
		a.peak = max(a.peak, w.Peak)
	}
	slices.SortStableFunc(order, func(a, b *agg) int { return b.most - a.most })
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %6s %7s %18s %22s %14s\n", "pattern", "docs", "writes", "most on one doc", "its sustained/s", "peak/s")
	for _, a := range order {
		fmt.Fprintf(&b, "%-34s %6d %7d %18d %22.2f %14d\n", a.pattern, a.docs, a.writes, a.most, float64(a.most)/d.Seconds(), a.peak)
	}
	return b.String()
}

var longID = regexp.MustCompile(`[A-Za-z0-9_=-]{20,}`)

// shorten keeps a document's name readable: long ids (hashes) are cut to their first 10
// characters, and the whole to n.
func shorten(name string, n int) string {
	s := longID.ReplaceAllStringFunc(name, func(id string) string { return id[:10] + "…" })
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// rawCodec passes messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }
