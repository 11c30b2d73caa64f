package archtest

import (
	"slices"
	"strings"
	"testing"
)

// storeLeaves are the project packages internal/store may import, directly or through one
// another: values and pure functions that do no I/O. The store's only I/O is Firestore; a
// package that calls anything else (the Graph API, the LLM, Cloud Tasks, an action endpoint)
// would reach every binary that keeps data, the public webhook included. A type the store must
// save goes into a leaf like these (turnstate holds the conversation state for that reason).
var storeLeaves = []string{
	module + "/internal/contact",
	module + "/internal/i18n",
	module + "/internal/keyedid",
	module + "/internal/logging",
	module + "/internal/randid",
	module + "/internal/tenant",
	module + "/internal/turnstate",
	// pricing holds the rate card and the exact Amount the ledger saves (standard library only).
	module + "/pricing",
}

// storeForbiddenStd are standard packages through which the store would do I/O other than
// Firestore's (the Firestore client uses them itself, so only the store's own imports count).
var storeForbiddenStd = []string{"net/http", "os/exec"}

// TestStoreImportsOnlyLeaves fails when internal/store (test files aside) reaches a project
// package that is not one of storeLeaves, naming the chain of imports that leads to it, or
// imports one of storeForbiddenStd itself.
func TestStoreImportsOnlyLeaves(t *testing.T) {
	t.Parallel()
	store := module + "/internal/store"
	g := goListImports(t, "-deps", store)
	if _, ok := g[store]; !ok {
		t.Fatalf("go list -deps %s did not list it", store)
	}
	for _, imp := range g[store] {
		if slices.Contains(storeForbiddenStd, imp) {
			t.Errorf("%s imports %s: the store does no I/O but Firestore's", store, imp)
		}
	}
	// Walk through the leaves only: past the first package that is not one, the chain is
	// already wrong, and its own imports would only repeat the error.
	for _, chain := range importChains(g, store, func(p string) bool { return slices.Contains(storeLeaves, p) }) {
		if last := chain[len(chain)-1]; strings.HasPrefix(last, module+"/") && !slices.Contains(storeLeaves, last) {
			t.Errorf("%s imports %s, which is not a leaf the store may import (%s): move the type the store "+
				"needs into a leaf package", store, strings.Join(chain[1:], " → "), strings.Join(storeLeaves, ", "))
		}
	}
}

// buildExcludes says which packages a binary's build must not contain: the public webhook
// answers Meta within a tight budget and holds the app secret, so it carries neither the LLM
// client nor the Gemini SDK (nor their start-up cost and attack surface).
var buildExcludes = []struct {
	binary   string
	excluded []string
}{
	{module + "/cmd/webhook", []string{"google.golang.org/genai", module + "/internal/llm"}},
}

// TestBuildExcludes fails when a binary's build (test files aside) contains a package it must
// not, or one under it, naming the chain of imports that brings it in.
func TestBuildExcludes(t *testing.T) {
	t.Parallel()
	for _, b := range buildExcludes {
		g := goListImports(t, "-deps", b.binary)
		if _, ok := g[b.binary]; !ok {
			t.Fatalf("go list -deps %s did not list it", b.binary)
		}
		excluded := func(p string) bool {
			return slices.ContainsFunc(b.excluded, func(ex string) bool { return p == ex || strings.HasPrefix(p, ex+"/") })
		}
		// Stop at an excluded package: what it imports in turn would only repeat the error.
		for _, chain := range importChains(g, b.binary, func(p string) bool { return !excluded(p) }) {
			if pkg := chain[len(chain)-1]; excluded(pkg) {
				t.Errorf("the build of %s contains %s, through %s", b.binary, pkg, strings.Join(chain, " → "))
			}
		}
	}
}

// importChains walks g breadth first from root and returns the shortest chain of imports from
// root to each package reached (root's own chain aside). It goes on through the imports of root
// and of the packages expand accepts, and stops at the others.
func importChains(g map[string][]string, root string, expand func(string) bool) [][]string {
	chains := [][]string{}
	seen := map[string]bool{root: true}
	queue := [][]string{{root}}
	for len(queue) > 0 {
		chain := queue[0]
		queue = queue[1:]
		for _, imp := range g[chain[len(chain)-1]] {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			next := append(slices.Clone(chain), imp)
			chains = append(chains, next)
			if expand(imp) {
				queue = append(queue, next)
			}
		}
	}
	return chains
}
