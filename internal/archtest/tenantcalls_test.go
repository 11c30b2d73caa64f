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

// tenantCalls is the room of the worker's tenant routes, tenantRoutes their contract.
const (
	tenantCalls  = module + "/internal/tenantcalls"
	tenantRoutes = module + "/tenantroutes"
)

// TestTenantRoutesHaveTheirRoom (issue 37 item 1): the tenant routes live in package tenantcalls,
// which the worker mounts as a handler without importing it, even indirectly; the routes' callers
// (the api, the console) reach them through package workerclient and their contract
// (tenantroutes) alone, never the routes' code; the room calls nothing of the services above it;
// and the contract, which both ends import, is a leaf that holds no code of either.
func TestTenantRoutesHaveTheirRoom(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	inRoom := func(p string) bool { return p == tenantCalls || strings.HasPrefix(p, tenantCalls+"/") }
	under := func(p, dir string) bool { return p == module+dir || strings.HasPrefix(p, module+dir+"/") }
	seen := 0
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		seen++
		switch {
		case under(p.ImportPath, "/internal/worker"):
			for _, d := range p.Deps {
				if inRoom(d) {
					t.Errorf("%s depends on %s: the worker mounts the tenant routes as a handler (Deps.TenantRoutes)", p.ImportPath, d)
				}
			}
		case under(p.ImportPath, "/internal/api"), under(p.ImportPath, "/internal/console"):
			for _, imp := range p.Imports {
				if inRoom(imp) {
					t.Errorf("%s imports %s: callers reach the tenant routes through workerclient and the contract", p.ImportPath, imp)
				}
			}
		case p.ImportPath == tenantRoutes:
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module+"/") && imp != module+"/tasks" {
					t.Errorf("%s imports %s: the contract is a leaf (it may name tasks' route prefix)", p.ImportPath, imp)
				}
			}
		case inRoom(p.ImportPath):
			for _, imp := range p.Imports {
				for _, up := range []string{"/internal/worker", "/internal/api", "/internal/console", "/internal/workerclient"} {
					if under(imp, up) {
						t.Errorf("%s imports %s: a capability never calls back up into a service or its client", p.ImportPath, imp)
					}
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list found %d packages; is the module %s?", seen, module)
	}
}
