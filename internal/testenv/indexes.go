package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// FirestoreTF is where the indexes are declared, relative to the module root.
const FirestoreTF = "terraform/firestore.tf"

// IndexConfig is what terraform/firestore.tf declares about Firestore's indexes: the composite
// indexes (google_firestore_index), the single-field index settings of some fields
// (google_firestore_field with an index_config: exactly the indexes it lists, none for an empty
// one, replacing Firestore's automatic ones), and which database holds each collection group.
//
// Databases are named by their google_firestore_database resource ("database", "inbound"); an
// index or field without a database attribute is in "database", the main one. A collection group
// lives in the databases whose TTL policies name it (the webhook's collections are in "inbound");
// one without a TTL policy lives in "database".
type IndexConfig struct {
	Composite []CompositeIndex
	Fields    []FieldIndexConfig
	groupDBs  map[string][]string
}

// CompositeIndex is one google_firestore_index.
type CompositeIndex struct {
	// Resource is its address ("google_firestore_index.console_inbox").
	Resource   string
	Database   string
	Collection string
	// Scope is "COLLECTION" or "COLLECTION_GROUP".
	Scope  string
	Fields []IndexField
}

// IndexField is one field of an index; Order is "ASCENDING", "DESCENDING" or "CONTAINS" (an
// array_config).
type IndexField struct {
	Path, Order string
}

// FieldIndexConfig is one google_firestore_field instance with an index_config.
type FieldIndexConfig struct {
	Resource   string
	Database   string
	Collection string
	Field      string
	// Indexes are the single-field indexes it keeps; empty switches them all off.
	Indexes []SingleFieldIndex
}

// SingleFieldIndex is one of a field's single-field indexes: Order "ASCENDING", "DESCENDING" or
// "CONTAINS", Scope "COLLECTION" or "COLLECTION_GROUP".
type SingleFieldIndex struct {
	Order, Scope string
}

// mainDatabase is the resource of the main database, where everything not otherwise placed is.
const mainDatabase = "database"

// automatic are the single-field indexes Firestore builds for every field by itself.
var automatic = []SingleFieldIndex{{"ASCENDING", "COLLECTION"}, {"DESCENDING", "COLLECTION"}, {"CONTAINS", "COLLECTION"}}

var (
	moduleRoot = sync.OnceValues(findModuleRoot)
	modulePath = sync.OnceValues(func() (string, error) {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		f, err := os.Open(filepath.Join(root, "go.mod"))
		if err != nil {
			return "", err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
				return strings.Trim(strings.TrimSpace(rest), `"`), nil
			}
		}
		return "", errors.New("go.mod has no module line")
	})
)

// findModuleRoot walks up from the working directory (a test's package directory) to go.mod.
func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// LoadIndexConfig reads terraform/firestore.tf of the module the tests run in.
func LoadIndexConfig() (*IndexConfig, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, FirestoreTF)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseIndexConfig(path, src)
}

// ParseIndexConfig reads the indexes a Terraform file declares. A for_each must evaluate from
// the file's own locals (toset(local.x), a literal set or map).
func ParseIndexConfig(filename string, src []byte) (*IndexConfig, error) {
	f, diags := hclparse.NewParser().ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	body := f.Body.(*hclsyntax.Body)
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.DynamicVal}, Functions: tfFunctions()}
	locals := map[string]*hclsyntax.Attribute{}
	for _, b := range body.Blocks {
		if b.Type == "locals" {
			for name, a := range b.Body.Attributes {
				locals[name] = a
			}
		}
	}
	known := map[string]cty.Value{}
	for progress := true; progress; {
		progress = false
		for name, a := range locals {
			if _, ok := known[name]; ok {
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(known)
			if v, d := a.Expr.Value(ctx); !d.HasErrors() && v.IsWhollyKnown() {
				known[name] = v
				progress = true
			}
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(known)

	c := &IndexConfig{groupDBs: map[string][]string{}}
	for _, b := range body.Blocks {
		if b.Type != "resource" || len(b.Labels) != 2 {
			continue
		}
		typ, addr := b.Labels[0], b.Labels[0]+"."+b.Labels[1]
		if typ != "google_firestore_index" && typ != "google_firestore_field" {
			continue
		}
		instances, err := forEachInstances(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		for key, each := range instances {
			ictx := ctx
			name := addr
			if each != cty.NilVal {
				ictx = ctx.NewChild()
				ictx.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": each})}
				name = fmt.Sprintf("%s[%q]", addr, key)
			}
			var err error
			if typ == "google_firestore_index" {
				err = c.addIndex(ictx, name, b.Body)
			} else {
				err = c.addField(ictx, name, b.Body)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	slices.SortFunc(c.Composite, func(a, b CompositeIndex) int { return strings.Compare(a.Resource, b.Resource) })
	slices.SortFunc(c.Fields, func(a, b FieldIndexConfig) int { return strings.Compare(a.Resource, b.Resource) })
	return c, nil
}

// forEachInstances are a resource's instances: key → each.value, or a single one with no each.
func forEachInstances(ctx *hcl.EvalContext, b *hclsyntax.Block) (map[string]cty.Value, error) {
	a := b.Body.Attributes["for_each"]
	if a == nil {
		return map[string]cty.Value{"": cty.NilVal}, nil
	}
	v, d := a.Expr.Value(ctx)
	if d.HasErrors() {
		return nil, fmt.Errorf("for_each: %v", d)
	}
	if !v.IsWhollyKnown() {
		return nil, errors.New("for_each is not known from this file alone")
	}
	out := map[string]cty.Value{}
	switch {
	case v.Type().IsSetType():
		for _, k := range v.AsValueSlice() {
			if k.Type() != cty.String {
				return nil, fmt.Errorf("for_each is a set of %s", k.Type().FriendlyName())
			}
			out[k.AsString()] = k
		}
	case v.Type().IsMapType() || v.Type().IsObjectType():
		for k, e := range v.AsValueMap() {
			out[k] = e
		}
	default:
		return nil, fmt.Errorf("for_each is a %s", v.Type().FriendlyName())
	}
	return out, nil
}

func (c *IndexConfig) addIndex(ctx *hcl.EvalContext, name string, body *hclsyntax.Body) error {
	ix := CompositeIndex{Resource: name, Database: databaseOf(body)}
	var err error
	if ix.Collection, err = stringAttr(ctx, body, "collection", ""); err != nil {
		return err
	}
	if ix.Scope, err = stringAttr(ctx, body, "query_scope", "COLLECTION"); err != nil {
		return err
	}
	api, err := stringAttr(ctx, body, "api_scope", "ANY_API")
	if err != nil {
		return err
	}
	for _, fb := range body.Blocks {
		if fb.Type != "fields" {
			continue
		}
		for _, vb := range fb.Body.Blocks {
			if vb.Type == "vector_config" {
				return nil // a vector index serves vector searches only
			}
		}
		var f IndexField
		if f.Path, err = stringAttr(ctx, fb.Body, "field_path", ""); err != nil {
			return err
		}
		order, err := stringAttr(ctx, fb.Body, "order", "")
		if err != nil {
			return err
		}
		array, err := stringAttr(ctx, fb.Body, "array_config", "")
		if err != nil {
			return err
		}
		if (order == "") == (array == "") {
			return fmt.Errorf("field %q: want exactly one of order and array_config", f.Path)
		}
		f.Order = order + array
		ix.Fields = append(ix.Fields, f)
	}
	if api != "ANY_API" {
		return nil // a Datastore-mode index serves no Firestore query
	}
	c.Composite = append(c.Composite, ix)
	return nil
}

func (c *IndexConfig) addField(ctx *hcl.EvalContext, name string, body *hclsyntax.Body) error {
	fc := FieldIndexConfig{Resource: name, Database: databaseOf(body)}
	var err error
	if fc.Collection, err = stringAttr(ctx, body, "collection", ""); err != nil {
		return err
	}
	if fc.Field, err = stringAttr(ctx, body, "field", ""); err != nil {
		return err
	}
	hasIndexConfig := false
	for _, b := range body.Blocks {
		switch b.Type {
		case "ttl_config":
			if !slices.Contains(c.groupDBs[fc.Collection], fc.Database) {
				c.groupDBs[fc.Collection] = append(c.groupDBs[fc.Collection], fc.Database)
			}
		case "index_config":
			hasIndexConfig = true
			for _, ib := range b.Body.Blocks {
				if ib.Type != "indexes" {
					continue
				}
				var si SingleFieldIndex
				order, err := stringAttr(ctx, ib.Body, "order", "")
				if err != nil {
					return err
				}
				array, err := stringAttr(ctx, ib.Body, "array_config", "")
				if err != nil {
					return err
				}
				if (order == "") == (array == "") {
					return errors.New("index_config.indexes: want exactly one of order and array_config")
				}
				si.Order = order + array
				if si.Scope, err = stringAttr(ctx, ib.Body, "query_scope", "COLLECTION"); err != nil {
					return err
				}
				fc.Indexes = append(fc.Indexes, si)
			}
		}
	}
	if hasIndexConfig {
		c.Fields = append(c.Fields, fc)
	}
	return nil
}

// Validate reports what Firestore (or Terraform) would refuse in the declarations: a composite
// index of fewer than two fields (one field's index is a google_firestore_field's), an unknown
// order or scope, more than one array field, the document name anywhere but last, and an index
// or a field's settings declared twice.
func (c *IndexConfig) Validate() []error {
	var errs []error
	seen := map[string]string{}
	validOrder := func(o string) bool { return o == "ASCENDING" || o == "DESCENDING" || o == "CONTAINS" }
	validScope := func(s string) bool { return s == "COLLECTION" || s == "COLLECTION_GROUP" }
	for _, ix := range c.Composite {
		if len(ix.Fields) < 2 {
			errs = append(errs, fmt.Errorf("%s: %d field(s); a composite index has two at least (declare one field's index with a google_firestore_field)", ix.Resource, len(ix.Fields)))
		}
		if !validScope(ix.Scope) {
			errs = append(errs, fmt.Errorf("%s: query_scope %q", ix.Resource, ix.Scope))
		}
		arrays := 0
		for i, f := range ix.Fields {
			if !validOrder(f.Order) {
				errs = append(errs, fmt.Errorf("%s: field %s: order %q", ix.Resource, f.Path, f.Order))
			}
			if f.Order == "CONTAINS" {
				arrays++
			}
			if f.Path == documentID && i != len(ix.Fields)-1 {
				errs = append(errs, fmt.Errorf("%s: %s must be the last field", ix.Resource, documentID))
			}
		}
		if arrays > 1 {
			errs = append(errs, fmt.Errorf("%s: %d array fields; an index has one at most", ix.Resource, arrays))
		}
		key := fmt.Sprint(ix.Database, ix.Collection, ix.Scope, ix.Fields)
		if other, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("%s: the same index as %s", ix.Resource, other))
		}
		seen[key] = ix.Resource
	}
	for _, fc := range c.Fields {
		key := fmt.Sprint("field", fc.Database, fc.Collection, fc.Field)
		if other, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("%s: sets the indexes of the same field as %s", fc.Resource, other))
		}
		seen[key] = fc.Resource
		for i, si := range fc.Indexes {
			if !validOrder(si.Order) || !validScope(si.Scope) {
				errs = append(errs, fmt.Errorf("%s: index %s in scope %s", fc.Resource, si.Order, si.Scope))
			}
			if slices.Contains(fc.Indexes[:i], si) {
				errs = append(errs, fmt.Errorf("%s: index %s in scope %s twice", fc.Resource, si.Order, si.Scope))
			}
		}
	}
	return errs
}

// stringAttr evaluates a string attribute, def when it is absent.
func stringAttr(ctx *hcl.EvalContext, body *hclsyntax.Body, name, def string) (string, error) {
	a := body.Attributes[name]
	if a == nil {
		return def, nil
	}
	v, d := a.Expr.Value(ctx)
	if d.HasErrors() {
		return "", fmt.Errorf("%s: %v", name, d)
	}
	if !v.IsWhollyKnown() || v.Type() != cty.String || v.IsNull() {
		return "", fmt.Errorf("%s is not a string known from this file alone", name)
	}
	return v.AsString(), nil
}

// databaseOf names the database of a resource by its google_firestore_database resource:
// "google_firestore_database.inbound.name" → "inbound"; none → the main database.
func databaseOf(body *hclsyntax.Body) string {
	a := body.Attributes["database"]
	if a == nil {
		return mainDatabase
	}
	if st, ok := a.Expr.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) >= 2 && st.Traversal.RootName() == "google_firestore_database" {
		if attr, ok := st.Traversal[1].(hcl.TraverseAttr); ok {
			return attr.Name
		}
	}
	return strings.TrimSpace(string(a.Expr.Range().SliceBytes(nil)))
}

// databases are the databases that hold collection group.
func (c *IndexConfig) databases(group string) []string {
	if dbs := c.groupDBs[group]; len(dbs) > 0 {
		return slices.Sorted(slices.Values(dbs))
	}
	return []string{mainDatabase}
}

// singleField are the single-field indexes of field in collection group of db: those of the
// most specific google_firestore_field on it or on a map that holds it, else the automatic ones.
func (c *IndexConfig) singleField(db, group, field string) []SingleFieldIndex {
	segs := fieldSegments(field)
	for n := len(segs); n > 0; n-- {
		for _, fc := range c.Fields {
			if fc.Database == db && fc.Collection == group && slices.Equal(fieldSegments(fc.Field), segs[:n]) {
				return fc.Indexes
			}
		}
	}
	return automatic
}

// fieldConfigOf is the google_firestore_field that sets field's single-field indexes, if any.
func (c *IndexConfig) fieldConfigOf(db, group, field string) *FieldIndexConfig {
	segs := fieldSegments(field)
	for n := len(segs); n > 0; n-- {
		for i, fc := range c.Fields {
			if fc.Database == db && fc.Collection == group && slices.Equal(fieldSegments(fc.Field), segs[:n]) {
				return &c.Fields[i]
			}
		}
	}
	return nil
}

// plan is what a query asks of an index: its filtered fields, each "EQ" (served by an
// ascending field) or "CONTAINS", in any order first, then its order (explicit, then the
// implicit order on the inequality fields) field by field, then the document name in the
// direction nameDesc.
type plan struct {
	filtered map[string]string
	order    []FieldOrder
	nameDesc bool
}

func planOf(s QueryShape) plan {
	p := plan{filtered: map[string]string{}}
	for _, f := range s.Equality {
		p.filtered[f] = "EQ"
	}
	for _, f := range s.Contains {
		p.filtered[f] = "CONTAINS"
	}
	has := func(f string) bool {
		return slices.ContainsFunc(p.order, func(o FieldOrder) bool { return o.Field == f })
	}
	for _, o := range s.OrderBy {
		// An order on a field an equality filter fixes orders nothing.
		if p.filtered[o.Field] != "EQ" && !has(o.Field) {
			p.order = append(p.order, o)
		}
	}
	last := false
	if n := len(s.OrderBy); n > 0 {
		last = s.OrderBy[n-1].Desc
	}
	for _, f := range s.Inequality {
		if !has(f) {
			p.order = append(p.order, FieldOrder{Field: f, Desc: last})
		}
	}
	p.order, p.nameDesc = trimName(p.order, false)
	return p
}

// trimName drops the order on the document name that ends an order when Firestore implies it
// (it has the previous order's direction, or is the only order), and returns the direction of
// the name: that order's, else the last order's, else def.
func trimName(order []FieldOrder, def bool) ([]FieldOrder, bool) {
	n := len(order)
	if n == 0 {
		return order, def
	}
	last := order[n-1]
	if last.Field == documentID && (n == 1 || order[n-2].Desc == last.Desc) {
		return order[:n-1], last.Desc
	}
	return order, last.Desc
}

// candidate is an index as a query planner sees it.
type candidate struct {
	fields []IndexField
	single bool // a single-field index, which serves equality in either direction
}

// serves reports whether ix, alone, serves p (full), and else which of p's filtered fields it
// serves in p's order (covered), for Firestore to merge it with others on the document name.
func (ix candidate) serves(p plan) (covered []string, full bool) {
	j := 0
	for ; j < len(ix.fields); j++ {
		f := ix.fields[j]
		kind, ok := p.filtered[f.Path]
		if !ok || slices.Contains(covered, f.Path) {
			break
		}
		if kind == "CONTAINS" && f.Order != "CONTAINS" || kind == "EQ" && f.Order != "ASCENDING" && !(ix.single && f.Order == "DESCENDING") {
			break
		}
		covered = append(covered, f.Path)
	}
	var rest []FieldOrder
	for _, f := range ix.fields[j:] {
		if f.Order == "CONTAINS" {
			return nil, false
		}
		rest = append(rest, FieldOrder{Field: f.Path, Desc: f.Order == "DESCENDING"})
	}
	def := false
	if j > 0 {
		def = ix.fields[j-1].Order == "DESCENDING"
	}
	order, nameDesc := trimName(rest, def)
	if nameDesc != p.nameDesc || !slices.Equal(order, p.order) {
		return nil, false
	}
	return covered, len(covered) == len(p.filtered)
}

// served reports whether the candidates serve p: one alone, or, for a query with equality
// filters only, several whose filtered fields together are the query's (Firestore merges the
// indexes of equality filters; it is not assumed to merge for an order).
func served(p plan, cands []candidate) bool {
	covered := map[string]bool{}
	for _, c := range cands {
		cov, full := c.serves(p)
		if full {
			return true
		}
		if len(p.order) == 0 {
			for _, f := range cov {
				covered[f] = true
			}
		}
	}
	return len(p.order) == 0 && len(covered) == len(p.filtered)
}

// candidates are the indexes of db that a query of s could use: the single-field indexes of the
// fields it names, and, when composite, the composite indexes on its collection group.
func (c *IndexConfig) candidates(db string, s QueryShape, composite bool) []candidate {
	var out []candidate
	fields := slices.Concat(s.Equality, s.Contains, s.Inequality)
	for _, o := range s.OrderBy {
		fields = append(fields, o.Field)
	}
	slices.Sort(fields)
	for _, f := range slices.Compact(fields) {
		if f == documentID {
			continue
		}
		for _, si := range c.singleField(db, s.Collection, f) {
			if si.Scope == s.Scope {
				out = append(out, candidate{fields: []IndexField{{f, si.Order}}, single: true})
			}
		}
	}
	if composite {
		for _, ix := range c.Composite {
			if ix.Database == db && ix.Collection == s.Collection && ix.Scope == s.Scope {
				out = append(out, candidate{fields: ix.Fields})
			}
		}
	}
	return out
}

// IndexReport is the check of recorded queries against an IndexConfig.
type IndexReport struct {
	// Shapes is how many query shapes were checked.
	Shapes int
	// NeedComposite is how many of them no single-field index serves (Firestore's automatic
	// ones, and those the file's google_firestore_field blocks add or remove): they need a
	// composite index (or, for one field, a single-field index the file must declare).
	NeedComposite int
	// Missing are those the file declares no index for.
	Missing []MissingIndex
}

// MissingIndex is a query Firestore would refuse (FAILED_PRECONDITION: the query requires an
// index) with the indexes declared, and what to declare.
type MissingIndex struct {
	Query    RecordedQuery
	Database string
	// Why says what is missing, in a sentence.
	Why string
	// Fields are the index that would serve the query: a composite index, or a single-field one
	// when there is one field. Empty when the check cannot tell.
	Fields []IndexField
	// HCL is a resource (or the change of one) that serves the query, ready to paste.
	HCL string
}

// Check checks every recorded query shape against the indexes declared.
func (c *IndexConfig) Check(queries []RecordedQuery) IndexReport {
	r := IndexReport{Shapes: len(queries)}
	for _, q := range queries {
		s := q.Shape
		if s.Unmodeled != "" {
			r.NeedComposite++
			r.Missing = append(r.Missing, MissingIndex{Query: q, Database: c.databases(s.Collection)[0],
				Why: "the query does " + s.Unmodeled + ", which this check does not model: declare its index by hand and teach internal/testenv/indexes.go the rule"})
			continue
		}
		needs := false
		for _, db := range c.databases(s.Collection) {
			m, single := c.check(db, q)
			if m != nil {
				r.Missing = append(r.Missing, *m)
			}
			needs = needs || !single
		}
		if needs {
			r.NeedComposite++
		}
	}
	return r
}

// check checks one shape in one database: what is missing (nil when served), and whether
// Firestore's automatic single-field indexes, as the file sets them, serve it.
func (c *IndexConfig) check(db string, q RecordedQuery) (*MissingIndex, bool) {
	s := q.Shape
	if len(s.Aggregated) > 0 {
		if len(s.Equality)+len(s.Contains)+len(s.Inequality)+len(s.OrderBy) > 0 {
			return &MissingIndex{Query: q, Database: db,
				Why: "a sum or avg over a filtered or ordered query needs an index that holds the aggregated fields, which this check does not model: declare it by hand and teach internal/testenv/indexes.go the rule"}, false
		}
		// Firestore sums from the index of each aggregated field.
		for _, f := range s.Aggregated {
			if !slices.ContainsFunc(c.singleField(db, s.Collection, f), func(si SingleFieldIndex) bool {
				return si.Scope == s.Scope && si.Order != "CONTAINS"
			}) {
				return &MissingIndex{Query: q, Database: db, Why: fmt.Sprintf("no single-field index on %s (%s scope) to sum from", f, s.Scope),
					Fields: []IndexField{{f, "ASCENDING"}},
					HCL:    c.fieldHCL(db, s, q, f, SingleFieldIndex{"ASCENDING", s.Scope})}, false
			}
		}
		return nil, true
	}
	p := planOf(s)
	single := served(p, c.candidates(db, s, false))
	if single || served(p, c.candidates(db, s, true)) {
		return nil, single
	}
	fields := suggestedFields(p)
	m := &MissingIndex{Query: q, Database: db, Fields: fields}
	switch len(fields) {
	case 1:
		// A composite index has two fields at least: this one is a single-field index, either
		// switched off by a google_firestore_field or one Firestore does not build by itself (a
		// collection-group one).
		f := fields[0]
		m.Why = fmt.Sprintf("no single-field index on %s (%s, %s scope)", f.Path, f.Order, s.Scope)
		m.HCL = c.fieldHCL(db, s, q, f.Path, SingleFieldIndex{f.Order, s.Scope})
	default:
		m.Why = "no composite index (" + describeFields(fields) + ")"
		if s.Scope == "COLLECTION_GROUP" {
			m.Why = "no collection-group composite index (" + describeFields(fields) + ")"
		}
		m.HCL = indexHCL(db, s, q, fields)
	}
	return m, single
}

// suggestedFields is the index a plan asks for: the filtered fields (sorted, equality ones
// ascending), then its order, with the name's order when Firestore would not imply it.
func suggestedFields(p plan) []IndexField {
	var out []IndexField
	for _, f := range slices.Sorted(func(yield func(string) bool) {
		for f := range p.filtered {
			if !yield(f) {
				return
			}
		}
	}) {
		order := "ASCENDING"
		if p.filtered[f] == "CONTAINS" {
			order = "CONTAINS"
		}
		out = append(out, IndexField{f, order})
	}
	for _, o := range p.order {
		out = append(out, IndexField{o.Field, direction(o.Desc)})
	}
	if len(p.order) == 0 && len(out) == 1 && p.nameDesc && out[0].Order == "ASCENDING" {
		out[0].Order = "DESCENDING" // an equality filter in the name's descending order
	} else if last := len(out) - 1; last >= 0 && out[last].Order != "CONTAINS" && (out[last].Order == "DESCENDING") != p.nameDesc {
		out = append(out, IndexField{documentID, direction(p.nameDesc)})
	}
	return out
}

func direction(desc bool) string {
	if desc {
		return "DESCENDING"
	}
	return "ASCENDING"
}

func describeFields(fields []IndexField) string {
	var parts []string
	for _, f := range fields {
		parts = append(parts, f.Path+" "+f.Order)
	}
	return strings.Join(parts, ", ")
}

// comment is the comment above a suggested resource: the query and its callers.
func comment(s QueryShape, q RecordedQuery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", s)
	for _, c := range q.Callers {
		fmt.Fprintf(&b, "# run by %s\n", c)
	}
	return b.String()
}

var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// resourceName makes a resource name of the collection and the fields.
func resourceName(collection string, fields []string) string {
	name := notIdent.ReplaceAllString(strings.ToLower(collection+"_"+strings.Join(fields, "_")), "_")
	name = strings.Trim(name, "_")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "index_" + name
	}
	return name
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// dbExpr refers to a database as databaseOf names it.
func dbExpr(db string) string {
	if ident.MatchString(db) {
		return "google_firestore_database." + db + ".name"
	}
	return db
}

// indexHCL is a google_firestore_index serving s.
func indexHCL(db string, s QueryShape, q RecordedQuery, fields []IndexField) string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Path)
	}
	var b strings.Builder
	b.WriteString(comment(s, q))
	fmt.Fprintf(&b, "resource \"google_firestore_index\" %q {\n", resourceName(s.Collection, names))
	fmt.Fprintf(&b, "project = var.project_id\ndatabase = %s\ncollection = %q\n", dbExpr(db), s.Collection)
	if s.Scope != "COLLECTION" {
		fmt.Fprintf(&b, "query_scope = %q\n", s.Scope)
	}
	b.WriteString("\n")
	for _, f := range fields {
		if f.Order == "CONTAINS" {
			fmt.Fprintf(&b, "fields {\nfield_path = %q\narray_config = \"CONTAINS\"\n}\n", f.Path)
		} else {
			fmt.Fprintf(&b, "fields {\nfield_path = %q\norder = %q\n}\n", f.Path, f.Order)
		}
	}
	b.WriteString("}\n")
	return string(hclwrite.Format([]byte(b.String())))
}

// fieldHCL is the google_firestore_field (new, or the change of the one there is) that gives
// field the single-field index want.
func (c *IndexConfig) fieldHCL(db string, s QueryShape, q RecordedQuery, field string, want SingleFieldIndex) string {
	indexes := slices.Clone(automatic)
	var b strings.Builder
	b.WriteString(comment(s, q))
	if fc := c.fieldConfigOf(db, s.Collection, field); fc != nil {
		fmt.Fprintf(&b, "# Add to the index_config of %s (which sets the indexes of %s):\n", fc.Resource, fc.Field)
		indexes = []SingleFieldIndex{want}
	} else {
		// An index_config replaces the automatic indexes: keep them.
		if !slices.Contains(indexes, want) {
			indexes = append(indexes, want)
		}
		fmt.Fprintf(&b, "resource \"google_firestore_field\" %q {\n", resourceName(s.Collection, []string{field}))
		fmt.Fprintf(&b, "project = var.project_id\ndatabase = %s\ncollection = %q\nfield = %q\n\nindex_config {\n", dbExpr(db), s.Collection, field)
	}
	for _, si := range indexes {
		b.WriteString("indexes {\n")
		if si.Order == "CONTAINS" {
			b.WriteString("array_config = \"CONTAINS\"\n")
		} else {
			fmt.Fprintf(&b, "order = %q\n", si.Order)
		}
		if si.Scope != "COLLECTION" {
			fmt.Fprintf(&b, "query_scope = %q\n", si.Scope)
		}
		b.WriteString("}\n")
	}
	if c.fieldConfigOf(db, s.Collection, field) == nil {
		b.WriteString("}\n}\n")
	}
	return string(hclwrite.Format([]byte(b.String())))
}

// Format renders the missing indexes for a test's output.
func (r IndexReport) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "testenv: %d of the %d Firestore query shapes these tests ran have no index in %s.\n", len(r.Missing), r.Shapes, FirestoreTF)
	b.WriteString("The emulator ignores indexes; Firestore refuses such a query (FAILED_PRECONDITION: the query requires an index).\n")
	b.WriteString("Declare each (then say in its comment which query needs it, in the file's style):\n")
	for _, m := range r.Missing {
		fmt.Fprintf(&b, "\n--- %s, in %s: %s\n", m.Query.Shape, dbExpr(m.Database), m.Why)
		if len(m.Query.Callers) == 0 {
			b.WriteString("    (caller unknown: the query ran alongside others, or in another process)\n")
		}
		b.WriteString(m.HCL)
	}
	return b.String()
}

// tfFunctions are the Terraform functions a for_each may use here.
func tfFunctions() map[string]function.Function {
	to := func(ty cty.Type) function.Function {
		return function.New(&function.Spec{
			Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType}},
			Type: func(args []cty.Value) (cty.Type, error) {
				v, err := convert.Convert(args[0], ty)
				if err != nil {
					return cty.NilType, err
				}
				return v.Type(), nil
			},
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return convert.Convert(args[0], ty) },
		})
	}
	return map[string]function.Function{
		"concat":   stdlib.ConcatFunc,
		"distinct": stdlib.DistinctFunc,
		"flatten":  stdlib.FlattenFunc,
		"keys":     stdlib.KeysFunc,
		"setunion": stdlib.SetUnionFunc,
		"tolist":   to(cty.List(cty.DynamicPseudoType)),
		"toset":    to(cty.Set(cty.DynamicPseudoType)),
		"values":   stdlib.ValuesFunc,
	}
}
