package testenv

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testTF is a firestore.tf in miniature: composite indexes in both scopes and both databases, a
// field whose single-field indexes are off, one with a collection-group index (and, as its
// index_config replaces the automatic indexes, no descending one), and TTL policies that place
// the collection groups "events" and "chunks" in the database "inbound".
const testTF = `
locals {
  inbound_groups = ["events", "chunks"]
}

resource "google_firestore_database" "database" {
  name = "(default)"
}

resource "google_firestore_database" "inbound" {
  name = "inbound"
}

resource "google_firestore_field" "inbound_expire_at" {
  for_each = toset(local.inbound_groups)

  database   = google_firestore_database.inbound.name
  collection = each.value
  field      = "expire_at"

  ttl_config {}
  index_config {}
}

resource "google_firestore_field" "blob" {
  database   = google_firestore_database.database.name
  collection = "orders"
  field      = "blob"

  index_config {}
}

resource "google_firestore_field" "meta" {
  collection = "orders"
  field      = "meta"

  index_config {}
}

resource "google_firestore_field" "message_text" {
  database   = google_firestore_database.database.name
  collection = "messages"
  field      = "text"

  index_config {
    indexes {
      order = "ASCENDING"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

resource "google_firestore_index" "orders_by_status" {
  database   = google_firestore_database.database.name
  collection = "orders"

  fields {
    field_path = "status"
    order      = "ASCENDING"
  }
  fields {
    field_path = "created_at"
    order      = "DESCENDING"
  }
}

# Its equality field descending: the check wants it ascending.
resource "google_firestore_index" "orders_by_region" {
  collection = "orders"

  fields {
    field_path = "region"
    order      = "DESCENDING"
  }
  fields {
    field_path = "created_at"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "orders_tagged" {
  collection = "orders"

  fields {
    field_path   = "tags"
    array_config = "CONTAINS"
  }
  fields {
    field_path = "created_at"
    order      = "DESCENDING"
  }
}

resource "google_firestore_index" "items_by_sku" {
  database    = google_firestore_database.database.name
  collection  = "items"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "sku"
    order      = "ASCENDING"
  }
  fields {
    field_path = "price"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "logs_at_then_name_desc" {
  database   = google_firestore_database.database.name
  collection = "logs"

  fields {
    field_path = "at"
    order      = "ASCENDING"
  }
  fields {
    field_path = "__name__"
    order      = "DESCENDING"
  }
}

resource "google_firestore_index" "events_by_kind" {
  database   = google_firestore_database.inbound.name
  collection = "events"

  fields {
    field_path = "kind"
    order      = "ASCENDING"
  }
  fields {
    field_path = "at"
    order      = "ASCENDING"
  }
}

# In the main database, where chunks are not.
resource "google_firestore_index" "chunks_by_event" {
  database   = google_firestore_database.database.name
  collection = "chunks"

  fields {
    field_path = "event"
    order      = "ASCENDING"
  }
  fields {
    field_path = "index"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "datastore_only" {
  collection = "orders"
  api_scope  = "DATASTORE_MODE_API"

  fields {
    field_path = "kind"
    order      = "ASCENDING"
  }
  fields {
    field_path = "created_at"
    order      = "ASCENDING"
  }
}
`

func parseTestTF(t *testing.T, src string) *IndexConfig {
	t.Helper()
	c, err := ParseIndexConfig("test.tf", []byte(src))
	if err != nil {
		t.Fatalf("ParseIndexConfig: %v", err)
	}
	return c
}

func TestParseIndexConfig(t *testing.T) {
	t.Parallel()
	c := parseTestTF(t, testTF)
	asc, desc := "ASCENDING", "DESCENDING"
	wantComposite := []CompositeIndex{
		{"google_firestore_index.chunks_by_event", "database", "chunks", "COLLECTION", []IndexField{{"event", asc}, {"index", asc}}},
		{"google_firestore_index.events_by_kind", "inbound", "events", "COLLECTION", []IndexField{{"kind", asc}, {"at", asc}}},
		{"google_firestore_index.items_by_sku", "database", "items", "COLLECTION_GROUP", []IndexField{{"sku", asc}, {"price", asc}}},
		{"google_firestore_index.logs_at_then_name_desc", "database", "logs", "COLLECTION", []IndexField{{"at", asc}, {"__name__", desc}}},
		{"google_firestore_index.orders_by_region", "database", "orders", "COLLECTION", []IndexField{{"region", desc}, {"created_at", asc}}},
		{"google_firestore_index.orders_by_status", "database", "orders", "COLLECTION", []IndexField{{"status", asc}, {"created_at", desc}}},
		{"google_firestore_index.orders_tagged", "database", "orders", "COLLECTION", []IndexField{{"tags", "CONTAINS"}, {"created_at", desc}}},
	}
	if diff := cmp.Diff(wantComposite, c.Composite); diff != "" {
		t.Errorf("composite indexes (-want, +got):\n%s", diff)
	}
	wantFields := []FieldIndexConfig{
		{"google_firestore_field.blob", "database", "orders", "blob", nil},
		{`google_firestore_field.inbound_expire_at["chunks"]`, "inbound", "chunks", "expire_at", nil},
		{`google_firestore_field.inbound_expire_at["events"]`, "inbound", "events", "expire_at", nil},
		{"google_firestore_field.message_text", "database", "messages", "text", []SingleFieldIndex{{asc, "COLLECTION"}, {asc, "COLLECTION_GROUP"}}},
		{"google_firestore_field.meta", "database", "orders", "meta", nil},
	}
	if diff := cmp.Diff(wantFields, c.Fields); diff != "" {
		t.Errorf("fields (-want, +got):\n%s", diff)
	}
	for group, want := range map[string][]string{"events": {"inbound"}, "chunks": {"inbound"}, "orders": {"database"}} {
		if diff := cmp.Diff(want, c.databases(group)); diff != "" {
			t.Errorf("databases(%q) (-want, +got):\n%s", group, diff)
		}
	}
}

// TestParseFirestoreTF reads the real file: the parser must understand its style.
func TestParseFirestoreTF(t *testing.T) {
	t.Parallel()
	c, err := LoadIndexConfig()
	if err != nil {
		t.Fatal(err)
	}
	var inbox *CompositeIndex
	for i, ix := range c.Composite {
		if ix.Resource == "google_firestore_index.console_inbox" {
			inbox = &c.Composite[i]
		}
	}
	want := &CompositeIndex{"google_firestore_index.console_inbox", "database", "conversations", "COLLECTION",
		[]IndexField{{"tenant_id", "ASCENDING"}, {"last_message_at", "DESCENDING"}}}
	if diff := cmp.Diff(want, inbox); diff != "" {
		t.Errorf("console_inbox (-want, +got):\n%s", diff)
	}
	if got := c.singleField("database", "messages", "text"); !cmp.Equal(got, []SingleFieldIndex{{"ASCENDING", "COLLECTION"}, {"ASCENDING", "COLLECTION_GROUP"}}) {
		t.Errorf("messages.text single-field indexes = %v", got)
	}
	if got := c.singleField("inbound", "inbound_events", "expire_at"); len(got) != 0 {
		t.Errorf("inbound_events.expire_at single-field indexes = %v, want none", got)
	}
	if diff := cmp.Diff([]string{"inbound"}, c.databases("payload_chunks")); diff != "" {
		t.Errorf("databases(payload_chunks) (-want, +got):\n%s", diff)
	}
}

// TestIndexRule is Firestore's rule, shape by shape, against testTF: whether the automatic
// single-field indexes (as the file sets them) serve the query, and, when no index does, the one
// to declare.
func TestIndexRule(t *testing.T) {
	t.Parallel()
	c := parseTestTF(t, testTF)
	asc := func(f string) FieldOrder { return FieldOrder{Field: f} }
	desc := func(f string) FieldOrder { return FieldOrder{Field: f, Desc: true} }
	coll := func(collection string) QueryShape { return QueryShape{Scope: "COLLECTION", Collection: collection} }
	group := func(collection string) QueryShape {
		return QueryShape{Scope: "COLLECTION_GROUP", Collection: collection}
	}
	with := func(s QueryShape, f func(*QueryShape)) QueryShape { f(&s); return s }
	type result struct {
		Automatic bool         // the automatic single-field indexes serve it
		Missing   []IndexField // the index to declare; nil when one declared serves it
		Database  string       // where it is missing
	}
	tests := []struct {
		name  string
		shape QueryShape
		want  result
	}{
		{"no filter", coll("orders"), result{Automatic: true}},
		{"equality on any number of fields", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"a", "b", "c"} }),
			result{Automatic: true}},
		{"equality and array-contains", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"a"}; s.Contains = []string{"tags"} }),
			result{Automatic: true}},
		{"equality on a map's subfield", with(coll("tenants"), func(s *QueryShape) { s.Equality = []string{"account.restricted"} }),
			result{Automatic: true}},
		{"range and order on one field", with(coll("orders"), func(s *QueryShape) { s.Inequality = []string{"at"}; s.OrderBy = []FieldOrder{asc("at")} }),
			result{Automatic: true}},
		{"range on one field, implicitly ordered", with(coll("orders"), func(s *QueryShape) { s.Inequality = []string{"at"} }),
			result{Automatic: true}},
		{"descending order on one field", with(coll("orders"), func(s *QueryShape) { s.OrderBy = []FieldOrder{desc("at")} }),
			result{Automatic: true}},
		{"order on a field an equality filter fixes", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"a", "b"}; s.OrderBy = []FieldOrder{asc("a")} }),
			result{Automatic: true}},
		{"equality, name descending", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"a"}; s.OrderBy = []FieldOrder{desc("__name__")} }),
			result{Automatic: true}},
		{"sum of a field", with(coll("shards"), func(s *QueryShape) { s.Aggregated = []string{"count", "tokens"} }),
			result{Automatic: true}},

		{"equality and order: declared", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"status"}; s.OrderBy = []FieldOrder{desc("created_at")} }),
			result{}},
		{"equality, range and order: declared", with(coll("orders"), func(s *QueryShape) {
			s.Equality = []string{"status"}
			s.Inequality = []string{"created_at"}
			s.OrderBy = []FieldOrder{desc("created_at")}
		}), result{}},
		{"array-contains and order: declared", with(coll("orders"), func(s *QueryShape) { s.Contains = []string{"tags"}; s.OrderBy = []FieldOrder{desc("created_at")} }),
			result{}},
		{"collection group: declared in its scope", with(group("items"), func(s *QueryShape) { s.Equality = []string{"sku"}; s.OrderBy = []FieldOrder{asc("price")} }),
			result{}},
		{"order then name the other way: declared", with(coll("logs"), func(s *QueryShape) { s.OrderBy = []FieldOrder{asc("at"), desc("__name__")} }),
			result{}},
		{"in the webhook's database: declared there", with(coll("events"), func(s *QueryShape) { s.Equality = []string{"kind"}; s.OrderBy = []FieldOrder{asc("at")} }),
			result{}},
		{"collection-group range on one field: its single-field index declared", with(group("messages"), func(s *QueryShape) {
			s.Inequality = []string{"text"}
			s.OrderBy = []FieldOrder{asc("text")}
		}), result{Automatic: true}},

		{"equality and order the other way", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"status"}; s.OrderBy = []FieldOrder{asc("created_at")} }),
			result{Missing: []IndexField{{"status", "ASCENDING"}, {"created_at", "ASCENDING"}}, Database: "database"}},
		{"equality and range: implicitly ascending", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"status"}; s.Inequality = []string{"created_at"} }),
			result{Missing: []IndexField{{"status", "ASCENDING"}, {"created_at", "ASCENDING"}}, Database: "database"}},
		{"equality on two fields and an order", with(coll("orders"), func(s *QueryShape) {
			s.Equality = []string{"status", "tenant"}
			s.OrderBy = []FieldOrder{desc("created_at")}
		}), result{Missing: []IndexField{{"status", "ASCENDING"}, {"tenant", "ASCENDING"}, {"created_at", "DESCENDING"}}, Database: "database"}},
		{"ranges on two fields: implicit order in path order", with(coll("orders"), func(s *QueryShape) { s.Inequality = []string{"a", "b"} }),
			result{Missing: []IndexField{{"a", "ASCENDING"}, {"b", "ASCENDING"}}, Database: "database"}},
		{"implicit order after the explicit one, in its direction", with(coll("orders"), func(s *QueryShape) {
			s.Inequality = []string{"a", "b"}
			s.OrderBy = []FieldOrder{desc("b")}
		}), result{Missing: []IndexField{{"b", "DESCENDING"}, {"a", "DESCENDING"}}, Database: "database"}},
		{"two orders", with(coll("orders"), func(s *QueryShape) { s.OrderBy = []FieldOrder{asc("x"), desc("y")} }),
			result{Missing: []IndexField{{"x", "ASCENDING"}, {"y", "DESCENDING"}}, Database: "database"}},
		{"order then name the other way", with(coll("orders"), func(s *QueryShape) { s.OrderBy = []FieldOrder{desc("x"), asc("__name__")} }),
			result{Missing: []IndexField{{"x", "DESCENDING"}, {"__name__", "ASCENDING"}}, Database: "database"}},
		{"equality on a field whose indexes are off", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"blob"} }),
			result{Missing: []IndexField{{"blob", "ASCENDING"}}, Database: "database"}},
		{"equality on the subfield of a map whose indexes are off", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"meta.kind"} }),
			result{Missing: []IndexField{{"meta.kind", "ASCENDING"}}, Database: "database"}},
		{"equalities, one on a field whose indexes are off", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"blob", "status"} }),
			result{Missing: []IndexField{{"blob", "ASCENDING"}, {"status", "ASCENDING"}}, Database: "database"}},
		{"order on a field whose indexes are off", with(coll("orders"), func(s *QueryShape) { s.OrderBy = []FieldOrder{desc("blob")} }),
			result{Missing: []IndexField{{"blob", "DESCENDING"}}, Database: "database"}},
		{"descending order on a field with only an ascending index", with(coll("messages"), func(s *QueryShape) { s.OrderBy = []FieldOrder{desc("text")} }),
			result{Missing: []IndexField{{"text", "DESCENDING"}}, Database: "database"}},
		{"equality in the name's descending order, no descending index", with(coll("messages"), func(s *QueryShape) {
			s.Equality = []string{"text"}
			s.OrderBy = []FieldOrder{desc("__name__")}
		}), result{Missing: []IndexField{{"text", "DESCENDING"}}, Database: "database"}},
		{"collection-group equality: no automatic index in that scope", with(group("items"), func(s *QueryShape) { s.Equality = []string{"sku"} }),
			result{Missing: []IndexField{{"sku", "ASCENDING"}}, Database: "database"}},
		{"collection group: declared for collections only", with(group("orders"), func(s *QueryShape) { s.Equality = []string{"status"}; s.OrderBy = []FieldOrder{desc("created_at")} }),
			result{Missing: []IndexField{{"status", "ASCENDING"}, {"created_at", "DESCENDING"}}, Database: "database"}},
		{"collection: declared for collection groups only", with(coll("items"), func(s *QueryShape) { s.Equality = []string{"sku"}; s.OrderBy = []FieldOrder{asc("price")} }),
			result{Missing: []IndexField{{"sku", "ASCENDING"}, {"price", "ASCENDING"}}, Database: "database"}},
		{"declared in the other database", with(coll("chunks"), func(s *QueryShape) { s.Equality = []string{"event"}; s.OrderBy = []FieldOrder{asc("index")} }),
			result{Missing: []IndexField{{"event", "ASCENDING"}, {"index", "ASCENDING"}}, Database: "inbound"}},
		{"declared with the equality field descending", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"region"}; s.OrderBy = []FieldOrder{asc("created_at")} }),
			result{Missing: []IndexField{{"region", "ASCENDING"}, {"created_at", "ASCENDING"}}, Database: "database"}},
		{"declared for the Datastore API only", with(coll("orders"), func(s *QueryShape) { s.Equality = []string{"kind"}; s.OrderBy = []FieldOrder{asc("created_at")} }),
			result{Missing: []IndexField{{"kind", "ASCENDING"}, {"created_at", "ASCENDING"}}, Database: "database"}},
		{"sum of a field whose indexes are off", with(coll("orders"), func(s *QueryShape) { s.Aggregated = []string{"blob"} }),
			result{Missing: []IndexField{{"blob", "ASCENDING"}}, Database: "database"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			report := c.Check([]RecordedQuery{{Shape: tc.shape}})
			got := result{Automatic: report.NeedComposite == 0}
			for _, m := range report.Missing {
				got.Missing, got.Database = m.Fields, m.Database
			}
			if len(report.Missing) > 1 {
				t.Errorf("%d missing indexes, want one at most: %+v", len(report.Missing), report.Missing)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want, +got):\n%s", tc.shape, diff)
			}
		})
	}
}

// TestUnmodeledQueriesAreReported: what the rule does not cover is reported, never passed.
func TestUnmodeledQueriesAreReported(t *testing.T) {
	t.Parallel()
	c := parseTestTF(t, testTF)
	for _, s := range []QueryShape{
		{Scope: "COLLECTION", Collection: "shards", Equality: []string{"tenant"}, Aggregated: []string{"count"}},
		{Scope: "COLLECTION", Collection: "docs", Unmodeled: "a vector search (find_nearest), which needs a vector index"},
	} {
		report := c.Check([]RecordedQuery{{Shape: s}})
		if len(report.Missing) != 1 || !strings.Contains(report.Missing[0].Why, "does not model") {
			t.Errorf("%s: missing = %+v, want it reported as not modelled", s, report.Missing)
		}
	}
}

// TestCheckReportsMissingIndex proves the check: a recorded query without its index is reported
// with a resource to paste, the binary's check fails on it, and the resource, once pasted,
// serves the query.
func TestCheckReportsMissingIndex(t *testing.T) {
	t.Parallel()
	const tf = `
resource "google_firestore_index" "orders_by_status" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "orders"

  fields {
    field_path = "status"
    order      = "ASCENDING"
  }
  fields {
    field_path = "created_at"
    order      = "DESCENDING"
  }
}
`
	declared := RecordedQuery{Shape: QueryShape{Scope: "COLLECTION", Collection: "orders", Equality: []string{"status"},
		OrderBy: []FieldOrder{{Field: "created_at", Desc: true}}}, Count: 3}
	missing := RecordedQuery{Shape: QueryShape{Scope: "COLLECTION_GROUP", Collection: "orders", Equality: []string{"tenant_id"},
		Inequality: []string{"total"}}, Count: 1, Callers: []string{"store.(*Orders).Big (internal/store/orders.go:12)"}}
	c := parseTestTF(t, tf)
	report := c.Check([]RecordedQuery{declared, missing})
	if report.Shapes != 2 || report.NeedComposite != 2 || len(report.Missing) != 1 {
		t.Fatalf("report = %d shapes, %d needing a composite index, %d missing; want 2, 2 and 1", report.Shapes, report.NeedComposite, len(report.Missing))
	}
	wantHCL := `# COLLECTION_GROUP orders: tenant_id ==, total range
# run by store.(*Orders).Big (internal/store/orders.go:12)
resource "google_firestore_index" "orders_tenant_id_total" {
  project     = var.project_id
  database    = google_firestore_database.database.name
  collection  = "orders"
  query_scope = "COLLECTION_GROUP"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "total"
    order      = "ASCENDING"
  }
}
`
	if diff := cmp.Diff(wantHCL, report.Missing[0].HCL); diff != "" {
		t.Errorf("HCL (-want, +got):\n%s", diff)
	}
	out := report.Format()
	for _, want := range []string{"1 of the 2 Firestore query shapes", "COLLECTION_GROUP orders: tenant_id ==, total range", wantHCL} {
		if !strings.Contains(out, want) {
			t.Errorf("Format() lacks %q:\n%s", want, out)
		}
	}

	// Pasted, the resource serves the query.
	if again := parseTestTF(t, tf+"\n"+report.Missing[0].HCL).Check([]RecordedQuery{declared, missing}); len(again.Missing) != 0 {
		t.Errorf("with the suggested resource, still missing: %+v", again.Missing)
	}

	// The binary's check fails on a query the real firestore.tf has no index for, and passes
	// one it has.
	var buf bytes.Buffer
	if code := CheckIndexes([]RecordedQuery{missing}, &buf); code != 1 || !strings.Contains(buf.String(), `resource "google_firestore_index"`) {
		t.Errorf("CheckIndexes of a query without its index = %d:\n%s\nwant 1 and the resource to declare", code, buf.String())
	}
	buf.Reset()
	inbox := RecordedQuery{Shape: QueryShape{Scope: "COLLECTION", Collection: "conversations", Equality: []string{"tenant_id"},
		OrderBy: []FieldOrder{{Field: "last_message_at", Desc: true}}}}
	if code := CheckIndexes([]RecordedQuery{inbox}, &buf); code != 0 {
		t.Errorf("CheckIndexes of the console's inbox query = %d:\n%s\nwant 0", code, buf.String())
	}
}

// TestSuggestedResourcesServe: every resource the check suggests, pasted, serves its query (and
// terraform fmt leaves it as it is: the HCL is formatted).
func TestSuggestedResourcesServe(t *testing.T) {
	t.Parallel()
	shapes := []QueryShape{
		{Scope: "COLLECTION", Collection: "orders", Equality: []string{"blob"}},
		{Scope: "COLLECTION_GROUP", Collection: "items", Equality: []string{"sku"}},
		{Scope: "COLLECTION", Collection: "messages", OrderBy: []FieldOrder{{Field: "text", Desc: true}}},
		{Scope: "COLLECTION", Collection: "orders", Contains: []string{"tags"}, Equality: []string{"a"}, OrderBy: []FieldOrder{{Field: "x"}}},
		{Scope: "COLLECTION", Collection: "orders", OrderBy: []FieldOrder{{Field: "x", Desc: true}, {Field: "__name__"}}},
		{Scope: "COLLECTION", Collection: "chunks", Equality: []string{"event"}, OrderBy: []FieldOrder{{Field: "index"}}},
	}
	for _, s := range shapes {
		report := parseTestTF(t, testTF).Check([]RecordedQuery{{Shape: s}})
		if len(report.Missing) != 1 {
			t.Errorf("%s: %d missing, want 1", s, len(report.Missing))
			continue
		}
		hcl := report.Missing[0].HCL
		if strings.Contains(hcl, "# Add to the index_config of") {
			continue // a change of a resource there is, not a resource
		}
		if again := parseTestTF(t, testTF+"\n"+hcl).Check([]RecordedQuery{{Shape: s}}); len(again.Missing) != 0 {
			t.Errorf("%s: with\n%s\nstill missing: %s", s, hcl, again.Missing[0].Why)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if errs := parseTestTF(t, testTF).Validate(); len(errs) != 0 {
		t.Errorf("Validate(testTF) = %v, want nothing", errs)
	}
	const bad = `
resource "google_firestore_index" "one_field" {
  collection = "orders"
  fields {
    field_path = "a"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "twice" {
  collection = "orders"
  fields {
    field_path = "a"
    order      = "ASCENDING"
  }
  fields {
    field_path = "b"
    order      = "DESCENDING"
  }
}

resource "google_firestore_index" "twice_again" {
  database   = google_firestore_database.database.name
  collection = "orders"
  fields {
    field_path = "a"
    order      = "ASCENDING"
  }
  fields {
    field_path = "b"
    order      = "DESCENDING"
  }
}

resource "google_firestore_index" "name_first" {
  collection = "orders"
  fields {
    field_path = "__name__"
    order      = "ASCENDING"
  }
  fields {
    field_path = "a"
    order      = "UP"
  }
}

resource "google_firestore_index" "two_arrays" {
  collection  = "orders"
  query_scope = "DATABASE"
  fields {
    field_path   = "a"
    array_config = "CONTAINS"
  }
  fields {
    field_path   = "b"
    array_config = "CONTAINS"
  }
}

resource "google_firestore_field" "text" {
  collection = "messages"
  field      = "text"
  index_config {
    indexes {
      order = "ASCENDING"
    }
    indexes {
      order = "ASCENDING"
    }
  }
}
`
	var got []string
	for _, err := range parseTestTF(t, bad).Validate() {
		got = append(got, err.Error())
	}
	want := []string{
		"google_firestore_index.name_first: __name__ must be the last field",
		"google_firestore_index.name_first: field a: order \"UP\"",
		"google_firestore_index.one_field: 1 field(s); a composite index has two at least (declare one field's index with a google_firestore_field)",
		"google_firestore_index.twice_again: the same index as google_firestore_index.twice",
		"google_firestore_index.two_arrays: query_scope \"DATABASE\"",
		"google_firestore_index.two_arrays: 2 array fields; an index has one at most",
		"google_firestore_field.text: index ASCENDING in scope COLLECTION twice",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate (-want, +got):\n%s", diff)
	}
}
