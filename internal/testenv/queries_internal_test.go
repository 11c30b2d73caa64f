package testenv

import (
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

// TestQueryShapes decodes requests as the client library sends them into their shapes.
func TestQueryShapes(t *testing.T) {
	t.Parallel()
	type pb = firestorepb.StructuredQuery
	ref := func(f string) *firestorepb.StructuredQuery_FieldReference {
		return &firestorepb.StructuredQuery_FieldReference{FieldPath: f}
	}
	field := func(f string, op firestorepb.StructuredQuery_FieldFilter_Operator) *firestorepb.StructuredQuery_Filter {
		return &firestorepb.StructuredQuery_Filter{FilterType: &firestorepb.StructuredQuery_Filter_FieldFilter{
			FieldFilter: &firestorepb.StructuredQuery_FieldFilter{Field: ref(f), Op: op, Value: &firestorepb.Value{}}}}
	}
	unary := func(f string, op firestorepb.StructuredQuery_UnaryFilter_Operator) *firestorepb.StructuredQuery_Filter {
		return &firestorepb.StructuredQuery_Filter{FilterType: &firestorepb.StructuredQuery_Filter_UnaryFilter{
			UnaryFilter: &firestorepb.StructuredQuery_UnaryFilter{Op: op, OperandType: &firestorepb.StructuredQuery_UnaryFilter_Field{Field: ref(f)}}}}
	}
	composite := func(op firestorepb.StructuredQuery_CompositeFilter_Operator, fs ...*firestorepb.StructuredQuery_Filter) *firestorepb.StructuredQuery_Filter {
		return &firestorepb.StructuredQuery_Filter{FilterType: &firestorepb.StructuredQuery_Filter_CompositeFilter{
			CompositeFilter: &firestorepb.StructuredQuery_CompositeFilter{Op: op, Filters: fs}}}
	}
	and := func(fs ...*firestorepb.StructuredQuery_Filter) *firestorepb.StructuredQuery_Filter {
		return composite(firestorepb.StructuredQuery_CompositeFilter_AND, fs...)
	}
	or := func(fs ...*firestorepb.StructuredQuery_Filter) *firestorepb.StructuredQuery_Filter {
		return composite(firestorepb.StructuredQuery_CompositeFilter_OR, fs...)
	}
	order := func(f string, desc bool) *firestorepb.StructuredQuery_Order {
		d := firestorepb.StructuredQuery_ASCENDING
		if desc {
			d = firestorepb.StructuredQuery_DESCENDING
		}
		return &firestorepb.StructuredQuery_Order{Field: ref(f), Direction: d}
	}
	from := func(c string, group bool) []*firestorepb.StructuredQuery_CollectionSelector {
		return []*firestorepb.StructuredQuery_CollectionSelector{{CollectionId: c, AllDescendants: group}}
	}
	const (
		eq, in, lt, gt, ne, notIn = firestorepb.StructuredQuery_FieldFilter_EQUAL, firestorepb.StructuredQuery_FieldFilter_IN,
			firestorepb.StructuredQuery_FieldFilter_LESS_THAN, firestorepb.StructuredQuery_FieldFilter_GREATER_THAN,
			firestorepb.StructuredQuery_FieldFilter_NOT_EQUAL, firestorepb.StructuredQuery_FieldFilter_NOT_IN
		contains, containsAny = firestorepb.StructuredQuery_FieldFilter_ARRAY_CONTAINS, firestorepb.StructuredQuery_FieldFilter_ARRAY_CONTAINS_ANY
	)
	sum := func(f string) *firestorepb.StructuredAggregationQuery_Aggregation {
		return &firestorepb.StructuredAggregationQuery_Aggregation{Operator: &firestorepb.StructuredAggregationQuery_Aggregation_Sum_{
			Sum: &firestorepb.StructuredAggregationQuery_Aggregation_Sum{Field: ref(f)}}}
	}
	count := &firestorepb.StructuredAggregationQuery_Aggregation{Operator: &firestorepb.StructuredAggregationQuery_Aggregation_Count_{
		Count: &firestorepb.StructuredAggregationQuery_Aggregation_Count{}}}

	tests := []struct {
		name string
		q    *pb
		aggs []*firestorepb.StructuredAggregationQuery_Aggregation
		want []QueryShape
	}{
		{"a collection", &pb{From: from("tenants", false)}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "tenants"}}},
		{"equalities, in, is null", &pb{From: from("orders", false), Where: and(field("b", eq), field("a", in), unary("c", firestorepb.StructuredQuery_UnaryFilter_IS_NULL))}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "orders", Equality: []string{"a", "b", "c"}}}},
		{"array-contains and array-contains-any", &pb{From: from("orders", false), Where: and(field("tags", contains), field("labels", containsAny))}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "orders", Contains: []string{"labels", "tags"}}}},
		{"inequalities in path order, segment by segment", &pb{From: from("orders", false),
			Where: and(field("a-b", lt), field("a.b", gt), field("z", ne), field("m", notIn), unary("k", firestorepb.StructuredQuery_UnaryFilter_IS_NOT_NULL))}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "orders", Inequality: []string{"a.b", "a-b", "k", "m", "z"}}}},
		{"a single filter, not in a composite", &pb{From: from("orders", false), Where: field("state", eq)}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "orders", Equality: []string{"state"}}}},
		{"a collection group, ordered", &pb{From: from("messages", true), Where: and(field("text", gt), field("text", lt)), OrderBy: []*firestorepb.StructuredQuery_Order{order("text", false)}}, nil,
			[]QueryShape{{Scope: "COLLECTION_GROUP", Collection: "messages", Inequality: []string{"text"}, OrderBy: []FieldOrder{{Field: "text"}}}}},
		{"the implied name order is dropped", &pb{From: from("conversations", false), Where: field("tenant_id", eq),
			OrderBy: []*firestorepb.StructuredQuery_Order{order("last_message_at", true), order("__name__", true)}}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "conversations", Equality: []string{"tenant_id"}, OrderBy: []FieldOrder{{Field: "last_message_at", Desc: true}}}}},
		{"a name order the other way is kept", &pb{From: from("logs", false),
			OrderBy: []*firestorepb.StructuredQuery_Order{order("at", true), order("__name__", false)}}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "logs", OrderBy: []FieldOrder{{Field: "at", Desc: true}, {Field: "__name__"}}}}},
		{"an ascending name order alone is dropped", &pb{From: from("tenants", false), OrderBy: []*firestorepb.StructuredQuery_Order{order("__name__", false)}}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "tenants"}}},
		{"a descending name order alone is kept", &pb{From: from("tenants", false), OrderBy: []*firestorepb.StructuredQuery_Order{order("__name__", true)}}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "tenants", OrderBy: []FieldOrder{{Field: "__name__", Desc: true}}}}},
		{"filters on the name are left out", &pb{From: from("tenants", false), Where: and(field("__name__", gt), field("plan", eq))}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "tenants", Equality: []string{"plan"}}}},
		{"OR: one shape per disjunct, with the query's inequality fields", &pb{From: from("orders", false),
			Where: and(field("tenant", eq), or(field("state", eq), field("total", gt)))}, nil,
			[]QueryShape{
				{Scope: "COLLECTION", Collection: "orders", Equality: []string{"state", "tenant"}, Inequality: []string{"total"}},
				{Scope: "COLLECTION", Collection: "orders", Equality: []string{"tenant"}, Inequality: []string{"total"}},
			}},
		{"a count", &pb{From: from("orders", false), Where: field("state", eq)}, []*firestorepb.StructuredAggregationQuery_Aggregation{count},
			[]QueryShape{{Scope: "COLLECTION", Collection: "orders", Equality: []string{"state"}}}},
		{"sums", &pb{From: from("shards", false)}, []*firestorepb.StructuredAggregationQuery_Aggregation{sum("prompt"), sum("output"), count},
			[]QueryShape{{Scope: "COLLECTION", Collection: "shards", Aggregated: []string{"output", "prompt"}}}},
		{"a vector search", &pb{From: from("docs", false), FindNearest: &firestorepb.StructuredQuery_FindNearest{VectorField: ref("v")}}, nil,
			[]QueryShape{{Scope: "COLLECTION", Collection: "docs", Unmodeled: "a vector search (find_nearest), which needs a vector index"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var method string
			var req proto.Message
			if tc.aggs == nil {
				method = "/google.firestore.v1.Firestore/RunQuery"
				req = &firestorepb.RunQueryRequest{Parent: "projects/p/databases/(default)/documents",
					QueryType: &firestorepb.RunQueryRequest_StructuredQuery{StructuredQuery: tc.q}}
			} else {
				method = "/google.firestore.v1.Firestore/RunAggregationQuery"
				req = &firestorepb.RunAggregationQueryRequest{Parent: "projects/p/databases/(default)/documents",
					QueryType: &firestorepb.RunAggregationQueryRequest_StructuredAggregationQuery{StructuredAggregationQuery: &firestorepb.StructuredAggregationQuery{
						QueryType:    &firestorepb.StructuredAggregationQuery_StructuredQuery{StructuredQuery: tc.q},
						Aggregations: tc.aggs,
					}}}
			}
			b, err := proto.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, queryShapes(method, b)); diff != "" {
				t.Errorf("shapes (-want, +got):\n%s", diff)
			}
		})
	}
	if got := queryShapes("/google.firestore.v1.Firestore/Commit", nil); got != nil {
		t.Errorf("shapes of a commit = %v, want none", got)
	}
}

func TestCallerOf(t *testing.T) {
	t.Parallel()
	stack := `goroutine 42 [select]:
google.golang.org/grpc/internal/transport.(*recvBufferReader).read(0xc000a1e0f0, {0xc000b2e000, 0x5, 0x200})
	/root/go/pkg/mod/google.golang.org/grpc@v1.85.0/internal/transport/transport.go:183 +0x8a
cloud.google.com/go/firestore.(*queryDocumentIterator).next(0xc000c1a000)
	/root/go/pkg/mod/cloud.google.com/go/firestore@v1.29.2/query.go:1490 +0x3b4
github.com/wapipe/wapipe/internal/testenv.helper(...)
	/work/main/internal/testenv/testenv.go:10
github.com/wapipe/wapipe/internal/store.queryAll[...]({0x1a2b3c0, 0xc000123450}, {0x0, 0x0}, {0x17e8f1a, 0xb})
	/work/main/internal/store/db.go:158 +0x1c5
github.com/wapipe/wapipe/internal/store.(*Sends).ReleaseParked(0xc0001c8000, {0x1a2b3c0, 0xc000123450}, {0xc0002e6000, 0x4})
	/work/main/internal/store/sends.go:252 +0x2f1
github.com/wapipe/wapipe/internal/store_test.TestParkMarksOnceAndReleaseOnce(0xc000103860)
	/work/main/internal/store/sends_test.go:86 +0x5a5
testing.tRunner(0xc000103860, 0x18a4e28)
	/usr/local/go/src/testing/testing.go:1792 +0xf4
created by testing.(*T).Run in goroutine 1
	/usr/local/go/src/testing/testing.go:1851 +0x413`
	got := callerOf(stack, "github.com/wapipe/wapipe")
	want := "store.queryAll[...] (/work/main/internal/store/db.go:158) ← store.(*Sends).ReleaseParked (/work/main/internal/store/sends.go:252)"
	if root, err := moduleRoot(); err == nil && root == "/work/main" {
		want = "store.queryAll[...] (internal/store/db.go:158) ← store.(*Sends).ReleaseParked (internal/store/sends.go:252)"
	}
	if got != want {
		t.Errorf("callerOf = %q, want %q", got, want)
	}
}
