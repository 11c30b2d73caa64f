package archtest

import (
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
	for path, imports := range goListImports(t, module+"/...") {
		for _, imp := range imports {
			for _, o := range owners {
				if (imp == o.library || strings.HasPrefix(imp, o.library+"/")) && !contains(o.packages, path) {
					t.Errorf("%s imports %s: only %s may", path, imp, strings.Join(o.packages, ", "))
				}
			}
		}
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
