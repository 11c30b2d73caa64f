package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestTenantsSharedNumber: two tenants apply one number with shared: true; a third that does
// not say shared is refused with one line naming the others and nothing written; show lists
// the number as shared.
func TestTenantsSharedNumber(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	file := func(id, shared string) string {
		return writeFile(t, "id: "+id+"\nname: "+id+"\nlanguage: id\naudience: members\nphone_numbers:\n"+
			"  - {phone_number_id: \"200\", waba_id: \"300\""+shared+"}\n")
	}
	mustCLI(t, e.args("apply", "-f", file("acme-bus", ", shared: true"))...)
	mustCLI(t, e.args("apply", "-f", file("bali-tours", ", shared: true"))...)

	_, errOut, err := cli(t, e.args("apply", "-f", file("java-trans", ""))...)
	want := "phone_numbers[0].shared: 200 is shared with tenant acme-bus, bali-tours: list it with shared: true"
	if err == nil || exitCode(err) == 0 || !strings.Contains(errOut, want) {
		t.Errorf("apply of a number shared by others, without shared: %v\nstderr:\n%s\nwant %q", err, errOut, want)
	}
	if _, _, err := cli(t, e.args("show", "java-trans")...); err == nil {
		t.Error("the refused tenant was stored")
	}

	if list := mustCLI(t, e.args("list")...); !regexp.MustCompile(`(?m)^acme-bus +no_token +1 \(1 shared\) `).MatchString(list) {
		t.Errorf("list does not count the shared number:\n%s", list)
	}
	for _, id := range []string{"acme-bus", "bali-tours"} {
		if show := mustCLI(t, e.args("show", id)...); !strings.Contains(show, "phone_number:    200 (waba 300, shared)\n") {
			t.Errorf("show %s does not list the number as shared:\n%s", id, show)
		}
	}
}
