package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's root, from this package's directory.
const root = "../.."

// sendStateMethods move an outbound record's send state: begin, settle, park, release. Only the
// store, which implements them, and the delivery package, which owns every send, call them.
// The other state changes have one owner each, outside this rule: a record is created pending by
// outbox (CreateSend), released by the outbox too (ReleaseParked), reopened by a replay
// (ReopenOutbound) and settled by a status webhook (ApplyStatus).
var sendStateMethods = map[string]bool{
	"BeginSend": true, "MarkSent": true, "MarkSkipped": true, "MarkFailed": true, "MarkRetry": true,
	"Park": true, "ReleaseDone": true,
}

// sendStateOwners may call sendStateMethods.
var sendStateOwners = []string{"internal/store/", "internal/delivery/"}

// productionFiles parses every non-test Go file of the module under dir (relative to the root)
// and calls f with its path relative to the root.
func productionFiles(t *testing.T, dir string, f func(rel string, fset *token.FileSet, file *ast.File)) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") && path != filepath.Join(root, dir) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		n++
		f(filepath.ToSlash(rel), fset, file)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return n
}

// TestSendStateOwners fails when a production file outside the store and the delivery package
// calls a method that moves an outbound record's send state: every send goes through delivery.
func TestSendStateOwners(t *testing.T) {
	t.Parallel()
	n := productionFiles(t, ".", func(rel string, fset *token.FileSet, file *ast.File) {
		for _, owner := range sendStateOwners {
			if strings.HasPrefix(rel, owner) {
				return
			}
		}
		ast.Inspect(file, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sendStateMethods[sel.Sel.Name] {
				t.Errorf("%s: calls %s: only %s move a record's send state (send through package delivery)",
					fset.Position(call.Pos()), sel.Sel.Name, strings.Join(sendStateOwners, ", "))
			}
			return true
		})
	})
	if n < 100 {
		t.Fatalf("found %d production files; is %s the module's root?", n, root)
	}
}
