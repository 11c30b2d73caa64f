package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// opCounts are the Firestore operations of one hop, as Firestore bills them: a write per
// document written (by a commit, a transaction's or not), a delete per document deleted (billed
// apart, at a lower price), a read per document a get returns or misses and per document a
// query returns (at least one per query).
type opCounts struct{ Writes, Reads, Deletes int }

// opCounter is a gRPC proxy in front of the Firestore emulator that counts what passes through.
type opCounter struct {
	mu  sync.Mutex
	cur opCounts
	// rpcs counts the calls by method, for the log.
	rpcs map[string]int
}

// take returns the counts since the last take and starts afresh.
func (c *opCounter) take() (opCounts, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, rpcs := c.cur, c.rpcs
	c.cur, c.rpcs = opCounts{}, map[string]int{}
	return got, rpcs
}

func (c *opCounter) request(method string, b []byte) {
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
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		if w.GetDelete() != "" {
			c.cur.Deletes++
		} else {
			c.cur.Writes++
		}
	}
	c.rpcs[method[strings.LastIndex(method, "/")+1:]]++
}

// response counts the reads of one response message and returns them.
func (c *opCounter) response(method string, b []byte) int {
	reads := 0
	switch {
	case strings.HasSuffix(method, "/GetDocument"), strings.HasSuffix(method, "/BatchGetDocuments"):
		reads = 1
	case strings.HasSuffix(method, "/RunQuery"):
		var r firestorepb.RunQueryResponse
		if proto.Unmarshal(b, &r) == nil && r.Document != nil {
			reads = 1
		}
	case strings.HasSuffix(method, "/RunAggregationQuery"):
		reads = 1
	}
	c.addReads(reads)
	return reads
}

func (c *opCounter) addReads(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.Reads += n
}

// rawCodec passes messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// startOpCounter serves a counting proxy to the Firestore emulator at target and returns its
// address.
func startOpCounter(t testing.TB, target string) (string, *opCounter) {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	c := &opCounter{rpcs: map[string]int{}}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		md, _ := metadata.FromIncomingContext(ss.Context())
		out := metadata.MD{}
		for k, v := range md {
			if !strings.HasPrefix(k, ":") && k != "content-type" && k != "user-agent" && !strings.HasPrefix(k, "grpc-") {
				out[k] = v
			}
		}
		ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), out))
		defer cancel()
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err != nil {
			return err
		}
		go func() {
			for {
				var m []byte
				if err := ss.RecvMsg(&m); err != nil {
					_ = cs.CloseSend()
					return
				}
				c.request(method, m)
				if err := cs.SendMsg(&m); err != nil {
					return
				}
			}
		}()
		reads := 0
		for first := true; ; first = false {
			var m []byte
			err := cs.RecvMsg(&m)
			if first {
				if h, herr := cs.Header(); herr == nil {
					_ = ss.SendHeader(h)
				}
			}
			if err == io.EOF {
				if reads == 0 && strings.HasSuffix(method, "/RunQuery") {
					c.addReads(1) // a query that returns nothing is billed one read
				}
				ss.SetTrailer(cs.Trailer())
				return nil
			}
			if err != nil {
				ss.SetTrailer(cs.Trailer())
				return err
			}
			reads += c.response(method, m)
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); conn.Close() })
	return ln.Addr().String(), c
}

// TestFirestoreOperationsPerMessage counts, on the emulator, the Firestore operations of each hop
// of one inbound text, its reply and the reply's three statuses (sent, delivered, read), and
// prints them. The webhook's and process_inbound's hops are held to their counts, so they cannot
// creep back; process_outbound's is printed as it stands.
func TestFirestoreOperationsPerMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, counter := startOpCounter(t, testenv.FirestoreHost(t))
	s, err := devstack.Start(ctx, devstack.Options{FirestoreHost: proxy, Project: testenv.ProjectID(t), Queues: testenv.FastQueues(t)})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(s.Stop)
	admin, err := taskqueue.NewAdmin(ctx, s.Project, s.Location, s.TasksAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if len(s.Tenants) != 1 {
		t.Fatalf("tenants %v, want the sample one", s.Tenants)
	}
	queues := []string{tasks.InboundQueueID, tasks.OutboundQueueID, tasks.TenantQueueID(s.Tenants[0])}
	for _, q := range queues {
		if err := admin.PauseQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// idle waits until no queue holds a task that can run: a paused queue's tasks wait.
	idle := func() {
		t.Helper()
		testenv.Eventually(t, 30*time.Second, func() bool {
			for _, q := range queues {
				st, err := admin.QueueStats(ctx, q)
				if err != nil || st.InFlight > 0 || (!st.Paused && st.Tasks > 0) {
					return false
				}
			}
			return true
		}, "queues never idle")
	}
	// run does step, waits for the pipeline to settle and records the hop's operations.
	type hop struct {
		name string
		ops  opCounts
		rpcs map[string]int
	}
	var hops []hop
	counter.take() // the stack's start-up
	run := func(name string, step func()) {
		t.Helper()
		step()
		idle()
		ops, rpcs := counter.take()
		hops = append(hops, hop{name, ops, rpcs})
	}
	post := func(body []byte) func() {
		return func() {
			if code := postSigned(t, s.WebhookURL, s.AppSecret, body); code != 200 {
				t.Fatalf("webhook answered %d", code)
			}
		}
	}
	drain := func(q string) func() {
		return func() {
			if err := admin.ResumeQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
			idle()
			if err := admin.PauseQueue(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}

	text := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: whatsapp.NewMessageID()}, "Table for two at 8?")
	run("webhook: text", post(text))
	run("process_inbound: text", drain(tasks.InboundQueueID))
	run("process_outbound: reply", func() {
		drain(tasks.TenantQueueID(s.Tenants[0]))()
		drain(tasks.OutboundQueueID)()
	})
	sends := s.Graph.Sends()
	if len(sends) != 1 || sends[0].MessageID == "" {
		t.Fatalf("the fake Graph API saw %d sends, want the one reply", len(sends))
	}
	callback, _ := sends[0].Body["biz_opaque_callback_data"].(string)
	for _, st := range []string{"sent", "delivered", "read"} {
		body := whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: sends[0].MessageID, BizOpaqueCallbackData: callback}, st)
		run("webhook: status "+st, post(body))
		run("process_inbound: status "+st, drain(tasks.InboundQueueID))
	}

	var total, mine opCounts
	var b strings.Builder
	for _, h := range hops {
		total.Writes += h.ops.Writes
		total.Reads += h.ops.Reads
		if !strings.HasPrefix(h.name, "process_outbound") {
			mine.Writes += h.ops.Writes
			mine.Reads += h.ops.Reads
		}
		methods := make([]string, 0, len(h.rpcs))
		for m, n := range h.rpcs {
			methods = append(methods, fmt.Sprintf("%s×%d", m, n))
		}
		slices.Sort(methods)
		fmt.Fprintf(&b, "  %-32s %2d writes %2d reads %2d deletes  (%s)\n", h.name, h.ops.Writes, h.ops.Reads, h.ops.Deletes, strings.Join(methods, " "))
	}
	t.Logf("Firestore operations per hop:\n%s  total: %d writes, %d reads; without process_outbound: %d writes, %d reads",
		b.String(), total.Writes, total.Reads, mine.Writes, mine.Reads)
	for _, h := range hops {
		if want, ok := hopBudget[strings.Fields(h.name)[0]+" "+strings.Fields(h.name)[1]]; ok && (h.ops.Writes > want.Writes || h.ops.Reads > want.Reads) {
			t.Errorf("%s: %d writes and %d reads, over its budget of %d and %d", h.name, h.ops.Writes, h.ops.Reads, want.Writes, want.Reads)
		}
	}
}

// hopBudget holds each hop this test guards to its count: a change that adds an operation to
// the hot path shows here first.
var hopBudget = map[string]opCounts{
	"webhook: text":           {Writes: 1, Reads: 0},
	"webhook: status":         {Writes: 1, Reads: 0},
	"process_inbound: text":   {Writes: 1, Reads: 2},
	"process_inbound: status": {Writes: 3, Reads: 2},
}

// postSigned posts body to the webhook, signed with secret, and returns the status code.
func postSigned(t testing.TB, url, secret string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(whatsapp.SignatureHeader, whatsapp.Sign(body, secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
