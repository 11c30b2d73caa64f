package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"testing"
)

// goListImports runs go list with args (patterns, and -deps for a build's closure) and returns
// each package listed with its imports, test files aside.
func goListImports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	g := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		g[p.ImportPath] = p.Imports
	}
	if len(g) < 10 {
		t.Fatalf("go list %v found %d packages; is the module %s?", args, len(g), module)
	}
	return g
}
