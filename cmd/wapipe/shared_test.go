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

// TestTenantsApplyRefusesAnotherTenantsMember is the red team's capture by file: bali-tours, on
// a number shared with acme-bus, lists acme's member in its own file. apply refuses it with one
// line naming acme-bus and writes nothing; --allow-shared-member applies it, as an operator who
// knows may.
func TestTenantsApplyRefusesAnotherTenantsMember(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	const member = "6281111111111"
	file := func(id, members string) string {
		return writeFile(t, "id: "+id+"\nname: "+id+"\nlanguage: id\naudience: members\nphone_numbers:\n"+
			"  - {phone_number_id: \"201\", waba_id: \"300\", shared: true}\n"+members)
	}
	mustCLI(t, e.args("apply", "-f", file("acme-bus", "members:\n  - {wa_id: \""+member+"\", role: owner}\n"))...)
	capture := file("bali-tours", "members:\n  - {wa_id: \""+member+"\", role: member}\n")
	_, errOut, err := cli(t, e.args("apply", "-f", capture)...)
	want := "members[0]: …1111 is already a member of tenant acme-bus on shared number 201: list them only with --allow-shared-member"
	if err == nil || exitCode(err) == 0 || !strings.Contains(errOut, want) {
		t.Errorf("apply of acme's member in bali's file: %v\nstderr:\n%s\nwant %q", err, errOut, want)
	}
	if strings.Contains(errOut, member) {
		t.Errorf("the refusal shows the whole number:\n%s", errOut)
	}
	if _, _, err := cli(t, e.args("show", "bali-tours")...); err == nil {
		t.Error("the refused tenant was stored")
	}
	mustCLI(t, e.args("apply", "-f", capture, "--allow-shared-member")...)
	if _, _, err := cli(t, e.args("show", "bali-tours")...); err != nil {
		t.Errorf("with --allow-shared-member the tenant was not stored: %v", err)
	}
}
