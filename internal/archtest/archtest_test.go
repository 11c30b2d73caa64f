package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/wapipe/wapipe"

// owners says which packages may import a client library: the package that wraps it for the
// rest of the code, and the emulators and test helpers that stand in for the service.
var owners = []struct {
	library  string
	packages []string
}{
	{"cloud.google.com/go/firestore", []string{
		module + "/internal/store",
		module + "/internal/testenv",
	}},
	{"cloud.google.com/go/cloudtasks", []string{
		module + "/internal/taskqueue",
		module + "/internal/cloudtasksemu",
		module + "/internal/testenv",
	}},
}

// TestClientLibraryOwners fails when a package other than a library's owners imports it (test
// files aside: tests may reach the emulators directly).
func TestClientLibraryOwners(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
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
		seen++
		for _, imp := range p.Imports {
			for _, o := range owners {
				if (imp == o.library || strings.HasPrefix(imp, o.library+"/")) && !contains(o.packages, p.ImportPath) {
					t.Errorf("%s imports %s: only %s may", p.ImportPath, imp, strings.Join(o.packages, ", "))
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list found %d packages; is the module %s?", seen, module)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
