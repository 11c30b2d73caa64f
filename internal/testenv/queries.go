package testenv

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"
)

// QueryRecorder is a gRPC proxy in front of the Firestore emulator that records the shape of
// every query passing through it (RunQuery, RunAggregationQuery and the queries of Listen), so
// that the indexes they need can be checked against terraform/firestore.tf: the emulator serves
// any query, Firestore only those it has an index for. RunWithFirestore puts one in front of the
// emulator for the whole test binary. Anything else (other RPCs, the emulator's REST endpoints)
// passes through untouched.
type QueryRecorder struct {
	// Addr is the proxy's host:port, the FIRESTORE_EMULATOR_HOST of the code it records.
	Addr string

	module string // the module path, to name the callers ("" when unknown)
	mu     sync.Mutex
	shapes map[string]*RecordedQuery // QueryShape.String() → its record
	stop   func()
}

// QueryShape is what decides which index a query needs: where it looks (a collection, or every
// collection of that id: a collection group), the fields its filters compare for equality, the
// fields of its range and inequality filters, and its explicit order. Values, limits, cursors
// and projections need no index of their own, and neither does the document id (__name__) that
// ends every index: an order on it is kept only when Firestore would not imply it (a direction
// other than the previous order's). A query with OR filters is one shape per disjunct, as
// Firestore serves each from its own index.
type QueryShape struct {
	// Scope is "COLLECTION" or "COLLECTION_GROUP", as in a google_firestore_index's query_scope.
	Scope string
	// Collection is the collection id (the last segment of the collection's path).
	Collection string
	// Equality are the fields of ==, in, "is null" and "is NaN" filters, sorted.
	Equality []string `json:",omitempty"`
	// Contains are the fields of array-contains and array-contains-any filters, sorted.
	Contains []string `json:",omitempty"`
	// Inequality are the fields of <, <=, >, >=, !=, not-in, "is not null" and "is not NaN"
	// filters (of the whole query, OR or not), in Firestore's order for its implicit orders.
	Inequality []string `json:",omitempty"`
	// OrderBy is the explicit order.
	OrderBy []FieldOrder `json:",omitempty"`
	// Aggregated are the fields of the sum and avg aggregations, sorted: Firestore computes
	// them from an index that holds them.
	Aggregated []string `json:",omitempty"`
	// Unmodeled names what the query does that the index rules here do not cover (a vector
	// search), so the check reports it rather than guess.
	Unmodeled string `json:",omitempty"`
}

// FieldOrder is one order of a query or one ordered field of an index.
type FieldOrder struct {
	Field string
	// Desc is true for DESCENDING.
	Desc bool `json:",omitempty"`
}

// RecordedQuery is a query shape and what the recorder saw of it.
type RecordedQuery struct {
	Shape QueryShape
	// Count is how many queries of this shape passed through.
	Count int
	// Callers are the code that ran a query of this shape, innermost first ("store.queryAll
	// (internal/store/db.go:154) ← store.(*Sends).Parked (internal/store/sends.go:252)"), as
	// far as the recorder could tell: it looks for the goroutines of this process that wait on
	// a Firestore query of its kind when one arrives, and keeps a caller when it was the only
	// one. When no caller was ever alone, the callers seen every time, each marked "maybe ".
	// Empty when the queries came from another process (a binary a test runs).
	Callers []string `json:",omitempty"`

	observed int      // the queries of this shape the recorder looked for a caller of
	maybe    []string // the callers seen with others, for when no caller was ever alone
}

// maxObservations bounds the goroutine dumps per shape: each stops the world.
const maxObservations = 12

// StartQueryRecorder serves a QueryRecorder in front of the Firestore emulator at target until
// the test ends.
func StartQueryRecorder(t testing.TB, target string) *QueryRecorder {
	t.Helper()
	r, err := startQueryRecorder(target)
	if err != nil {
		t.Fatalf("start the query recorder: %v", err)
	}
	t.Cleanup(r.Stop)
	return r
}

func startQueryRecorder(target string) (*QueryRecorder, error) {
	const maxMsg = 256 << 20 // a commit of payload chunks is several MiB; the default is 4 MiB
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		return nil, err
	}
	module, _ := modulePath()
	r := &QueryRecorder{Addr: ln.Addr().String(), module: module, shapes: map[string]*RecordedQuery{}}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(r.forward(conn)),
		grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}))
	grpcLn := &chanListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	go grpcLn.split(ln, target)
	go func() { _ = srv.Serve(grpcLn) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			ln.Close()
			srv.Stop()
			conn.Close()
		})
	}
	return r, nil
}

// Stop closes the proxy.
func (r *QueryRecorder) Stop() { r.stop() }

// Shapes returns every query shape recorded so far, in a stable order.
func (r *QueryRecorder) Shapes() []RecordedQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RecordedQuery, 0, len(r.shapes))
	for _, q := range r.shapes {
		c := *q
		c.Callers = slices.Clone(q.Callers)
		if len(c.Callers) == 0 && len(q.maybe) > 0 {
			for _, m := range q.maybe {
				c.Callers = append(c.Callers, "maybe "+m)
			}
		}
		c.maybe = nil
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b RecordedQuery) int { return strings.Compare(a.Shape.String(), b.Shape.String()) })
	return out
}

// forward relays every call to conn, recording the shapes of the queries it carries.
func (r *QueryRecorder) forward(conn *grpc.ClientConn) grpc.StreamHandler {
	return relay(conn, relayHooks{onRequest: func(method string, m []byte) {
		if shapes := queryShapes(method, m); len(shapes) > 0 {
			r.record(queryKind(method), shapes)
		}
	}})
}

// record counts one query of the given shapes (its disjuncts), run by method kind, and looks for
// its caller while the shape has had few looks.
func (r *QueryRecorder) record(kind string, shapes []QueryShape) {
	r.mu.Lock()
	look := false
	var recs []*RecordedQuery
	for _, s := range shapes {
		key := s.String()
		q := r.shapes[key]
		if q == nil {
			q = &RecordedQuery{Shape: s}
			r.shapes[key] = q
		}
		q.Count++
		if q.observed < maxObservations {
			q.observed++
			look = true
		}
		recs = append(recs, q)
	}
	r.mu.Unlock()
	if !look {
		return
	}
	callers := r.queryCallers(kind)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range recs {
		switch {
		case len(callers) == 1:
			if !slices.Contains(q.Callers, callers[0]) {
				q.Callers = append(q.Callers, callers[0])
			}
		case len(q.Callers) == 0 && len(callers) > 1:
			// Keep the callers seen every time (the shape's caller is among them each time).
			if q.maybe == nil {
				q.maybe = slices.Clone(callers)
			} else {
				q.maybe = slices.DeleteFunc(q.maybe, func(c string) bool { return !slices.Contains(callers, c) })
			}
		}
	}
}

// inFlight are the client library's functions that wait on each kind of query.
var inFlight = map[string]string{
	"RunQuery":            "cloud.google.com/go/firestore.(*queryDocumentIterator).next(",
	"RunAggregationQuery": "cloud.google.com/go/firestore.(*AggregationQuery).GetResponse(",
	"Listen":              "cloud.google.com/go/firestore.(*watchStream)",
}

// queryCallers names the code of every goroutine of this process that waits on a Firestore
// query of kind: the first frames of the module below the client library.
func (r *QueryRecorder) queryCallers(kind string) []string {
	if r.module == "" {
		return nil
	}
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		if len(buf) >= 64<<20 {
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, inFlight[kind]) {
			continue
		}
		if c := callerOf(g, r.module); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// callerOf reads one goroutine's stack (runtime.Stack's text) and returns its first frames in
// module (outside this package), innermost first, up to three and up to the first in a test file
// (which ends the chain, or is it when the query is the test's own): "store.queryAll
// (internal/store/db.go:154) ← store.(*Sends).Parked (internal/store/sends.go:252)".
func callerOf(stack, module string) string {
	lines := strings.Split(stack, "\n")
	var frames []string
	for i := 1; i+1 < len(lines) && len(frames) < 3; i += 2 {
		fn, loc := lines[i], strings.TrimSpace(lines[i+1])
		if strings.HasPrefix(fn, "created by ") {
			break
		}
		if !strings.HasPrefix(fn, module+"/") && !strings.HasPrefix(fn, module+".") {
			continue
		}
		if strings.HasPrefix(fn, module+"/internal/testenv.") {
			continue
		}
		if p := strings.LastIndex(fn, "("); p > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:p] // the arguments
		}
		fn = strings.TrimPrefix(fn, module+"/")
		if j := strings.LastIndex(fn, "/"); j >= 0 {
			fn = fn[j+1:] // "store.(*Sends).Parked"
		}
		if j := strings.Index(loc, " +0x"); j >= 0 {
			loc = loc[:j]
		}
		inTest := strings.Contains(loc, "_test.go:")
		if inTest && len(frames) > 0 {
			break
		}
		frames = append(frames, fn+" ("+shortPath(loc)+")")
		if inTest {
			break
		}
	}
	return strings.Join(frames, " ← ")
}

// shortPath makes an absolute file:line relative to the module root, when it is under it.
func shortPath(loc string) string {
	root, err := moduleRoot()
	if err == nil && strings.HasPrefix(loc, root+"/") {
		return loc[len(root)+1:]
	}
	return loc
}

// queryShapes decodes the request of method into the shapes of the query it runs (one per
// disjunct of an OR), or none.
func queryShapes(method string, b []byte) []QueryShape {
	var q *firestorepb.StructuredQuery
	var aggs []*firestorepb.StructuredAggregationQuery_Aggregation
	switch queryKind(method) {
	case "RunQuery":
		var r firestorepb.RunQueryRequest
		if proto.Unmarshal(b, &r) != nil {
			return nil
		}
		q = r.GetStructuredQuery()
	case "RunAggregationQuery":
		var r firestorepb.RunAggregationQueryRequest
		if proto.Unmarshal(b, &r) != nil {
			return nil
		}
		a := r.GetStructuredAggregationQuery()
		q, aggs = a.GetStructuredQuery(), a.GetAggregations()
	case "Listen":
		var r firestorepb.ListenRequest
		if proto.Unmarshal(b, &r) != nil {
			return nil
		}
		q = r.GetAddTarget().GetQuery().GetStructuredQuery()
	}
	if q == nil {
		return nil
	}
	// The scope and the collection id are the query's own: its parent (a document under which
	// to look) needs no index.
	return shapesOf(q, aggs)
}

// queryKind is the method's name when it runs queries, else "".
func queryKind(method string) string {
	name := method[strings.LastIndex(method, "/")+1:]
	switch name {
	case "RunQuery", "RunAggregationQuery", "Listen":
		return name
	}
	return ""
}

// shapesOf normalises a structured query into its shapes.
func shapesOf(q *firestorepb.StructuredQuery, aggs []*firestorepb.StructuredAggregationQuery_Aggregation) []QueryShape {
	base := QueryShape{Scope: "COLLECTION", Aggregated: aggregatedFields(aggs), OrderBy: explicitOrder(q.GetOrderBy())}
	if from := q.GetFrom(); len(from) == 1 {
		base.Collection = from[0].GetCollectionId()
		if from[0].GetAllDescendants() {
			base.Scope = "COLLECTION_GROUP"
		}
	} else {
		base.Unmodeled = strconv.Itoa(len(from)) + " collection selectors"
	}
	if q.GetFindNearest() != nil {
		base.Unmodeled = "a vector search (find_nearest), which needs a vector index"
	}
	disjuncts := dnf(q.GetWhere())
	// Firestore orders implicitly by every inequality field of the query, in the lexicographic
	// order of their paths, after the explicit orders.
	for _, d := range disjuncts {
		for _, f := range d {
			if f.kind == inequality && !slices.Contains(base.Inequality, f.field) {
				base.Inequality = append(base.Inequality, f.field)
			}
		}
	}
	slices.SortFunc(base.Inequality, compareFieldPaths)
	if len(disjuncts) == 0 {
		disjuncts = [][]filterField{nil}
	}
	var out []QueryShape
	for _, d := range disjuncts {
		s := base
		s.Inequality, s.OrderBy, s.Aggregated = slices.Clone(base.Inequality), slices.Clone(base.OrderBy), slices.Clone(base.Aggregated)
		for _, f := range d {
			switch {
			case f.kind == equality && !slices.Contains(s.Equality, f.field):
				s.Equality = append(s.Equality, f.field)
			case f.kind == contains && !slices.Contains(s.Contains, f.field):
				s.Contains = append(s.Contains, f.field)
			}
		}
		slices.Sort(s.Equality)
		slices.Sort(s.Contains)
		if !slices.ContainsFunc(out, func(o QueryShape) bool { return o.String() == s.String() }) {
			out = append(out, s)
		}
	}
	return out
}

// aggregatedFields are the fields of the sum and avg aggregations, sorted.
func aggregatedFields(aggs []*firestorepb.StructuredAggregationQuery_Aggregation) []string {
	var out []string
	for _, a := range aggs {
		f := a.GetSum().GetField().GetFieldPath()
		if f == "" {
			f = a.GetAvg().GetField().GetFieldPath()
		}
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// explicitOrder is a query's order, without the order on __name__ that ends it when Firestore
// implies it: with the previous order's direction (ascending when it is the only one).
func explicitOrder(orders []*firestorepb.StructuredQuery_Order) []FieldOrder {
	var out []FieldOrder
	for _, o := range orders {
		out = append(out, FieldOrder{Field: o.GetField().GetFieldPath(), Desc: o.GetDirection() == firestorepb.StructuredQuery_DESCENDING})
	}
	if n := len(out); n > 0 && out[n-1].Field == documentID {
		if (n == 1 && !out[0].Desc) || (n > 1 && out[n-2].Desc == out[n-1].Desc) {
			out = out[:n-1]
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// documentID is the field path of a document's name.
const documentID = "__name__"

type filterKind int

const (
	equality filterKind = iota
	contains
	inequality
)

// filterField is one filter of a conjunction, reduced to what an index sees.
type filterField struct {
	field string
	kind  filterKind
}

// dnf is the filter as a disjunction of conjunctions (Firestore's own normal form for OR
// queries). Filters on __name__ are left out: every index ends with it.
func dnf(f *firestorepb.StructuredQuery_Filter) [][]filterField {
	if f == nil {
		return nil
	}
	if c := f.GetCompositeFilter(); c != nil {
		if c.GetOp() == firestorepb.StructuredQuery_CompositeFilter_OR {
			var out [][]filterField
			for _, sub := range c.GetFilters() {
				out = append(out, dnf(sub)...)
			}
			return out
		}
		out := [][]filterField{nil}
		for _, sub := range c.GetFilters() {
			d := dnf(sub)
			if len(d) == 0 {
				continue
			}
			var next [][]filterField
			for _, a := range out {
				for _, b := range d {
					next = append(next, append(slices.Clone(a), b...))
				}
			}
			out = next
		}
		return out
	}
	var ff filterField
	switch {
	case f.GetFieldFilter() != nil:
		x := f.GetFieldFilter()
		ff.field = x.GetField().GetFieldPath()
		switch x.GetOp() {
		case firestorepb.StructuredQuery_FieldFilter_EQUAL, firestorepb.StructuredQuery_FieldFilter_IN:
			ff.kind = equality
		case firestorepb.StructuredQuery_FieldFilter_ARRAY_CONTAINS, firestorepb.StructuredQuery_FieldFilter_ARRAY_CONTAINS_ANY:
			ff.kind = contains
		default:
			ff.kind = inequality
		}
	case f.GetUnaryFilter() != nil:
		x := f.GetUnaryFilter()
		ff.field = x.GetField().GetFieldPath()
		switch x.GetOp() {
		case firestorepb.StructuredQuery_UnaryFilter_IS_NULL, firestorepb.StructuredQuery_UnaryFilter_IS_NAN:
			ff.kind = equality
		default:
			ff.kind = inequality
		}
	default:
		return nil
	}
	if ff.field == documentID {
		return [][]filterField{nil}
	}
	return [][]filterField{{ff}}
}

// compareFieldPaths orders field paths segment by segment, as Firestore does.
func compareFieldPaths(a, b string) int { return slices.Compare(fieldSegments(a), fieldSegments(b)) }

// fieldSegments splits a field path on its dots, minding `quoted` segments.
func fieldSegments(p string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '`':
			quoted = !quoted
		case c == '\\' && quoted && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case c == '.' && !quoted:
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, cur.String())
}

// String renders the shape on one line: "COLLECTION outbound_messages: state ==, sent_at range;
// order by sent_at".
func (s QueryShape) String() string {
	var b strings.Builder
	b.WriteString(s.Scope + " " + s.Collection)
	var parts []string
	for _, f := range s.Equality {
		parts = append(parts, f+" ==")
	}
	for _, f := range s.Contains {
		parts = append(parts, f+" array-contains")
	}
	for _, f := range s.Inequality {
		parts = append(parts, f+" range")
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	if len(s.OrderBy) > 0 {
		var os []string
		for _, o := range s.OrderBy {
			os = append(os, o.String())
		}
		b.WriteString("; order by " + strings.Join(os, ", "))
	}
	if len(s.Aggregated) > 0 {
		b.WriteString("; sum/avg of " + strings.Join(s.Aggregated, ", "))
	}
	if s.Unmodeled != "" {
		b.WriteString("; " + s.Unmodeled)
	}
	return b.String()
}

func (o FieldOrder) String() string {
	if o.Desc {
		return o.Field + " DESC"
	}
	return o.Field + " ASC"
}

// chanListener hands the proxy's gRPC server the connections that speak HTTP/2; split relays
// the others (the emulator's REST endpoints over HTTP/1.1) to the emulator byte for byte.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// split accepts on ln until it closes.
func (l *chanListener) split(ln net.Listener, target string) {
	defer l.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			br := bufio.NewReader(c)
			head, err := br.Peek(3)
			if err != nil {
				c.Close()
				return
			}
			pc := &peekedConn{Conn: c, r: br}
			if string(head) == "PRI" { // the HTTP/2 connection preface
				select {
				case l.conns <- pc:
				case <-l.done:
					c.Close()
				}
				return
			}
			relayTCP(pc, target)
		}()
	}
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// relayTCP copies c to a new connection to target and back until either side closes.
func relayTCP(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
