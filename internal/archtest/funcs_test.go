package archtest

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of internal/ or cmd/ may be, in lines from its signature
// to its closing brace.
const maxFuncLines = 80

// longFuncsExempt are the packages the rule does not cover: the emulators and fakes, which
// mirror another service's API, not wapipe's design.
var longFuncsExempt = []string{
	"internal/cloudtasksemu/", "internal/firestoreemu/", "internal/graph/graphfake/", "internal/llm/geminifake/",
	"internal/secrets/kmsfake/", "internal/actioncall/actionfake/", "cmd/tasks-emulator/",
}

// TestFunctionLength fails for a production function of internal/ or cmd/ over maxFuncLines
// lines.
func TestFunctionLength(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"internal", "cmd"} {
		productionFiles(t, dir, checkFunctionLength(t))
	}
}

// checkFunctionLength reports the functions of a file over maxFuncLines lines.
func checkFunctionLength(t *testing.T) func(rel string, fset *token.FileSet, file *ast.File) {
	return func(rel string, fset *token.FileSet, file *ast.File) {
		for _, p := range longFuncsExempt {
			if strings.HasPrefix(rel, p) {
				return
			}
		}
		ast.Inspect(file, func(node ast.Node) bool {
			var body *ast.BlockStmt
			switch fn := node.(type) {
			case *ast.FuncDecl:
				body = fn.Body
			case *ast.FuncLit:
				body = fn.Body
			default:
				return true
			}
			if body == nil {
				return true
			}
			start, end := fset.Position(node.Pos()), fset.Position(body.Rbrace)
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s: function of %d lines, over %d", start, n, maxFuncLines)
			}
			return true
		})
	}
}
