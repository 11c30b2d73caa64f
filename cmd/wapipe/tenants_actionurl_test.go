package main

import (
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/store"
)

// TestTenantsApplyActionURLOutsideDev (issue 22, item 6) is not parallel: it sets APP_ENV, as
// the CLI reads the environment. Outside dev (APP_ENV unset means prod) apply refuses the
// sample's loopback http action URL and a private address with one line each, and writes
// nothing; with APP_ENV=dev the sample applies. An operator outside dev runs the CLI with the
// deployment's LOG_HASH_KEY (it names people's documents as the services do, and refuses to run
// without it), so the test gives one.
func TestTenantsApplyActionURLOutsideDev(t *testing.T) {
	e := newTenantEnv(t)
	private := writeFile(t, `id: acme-private
name: Acme
language: en
audience: public
phone_numbers:
  - {phone_number_id: "220000000000001", waba_id: "320000000000001"}
assistant:
  mode: llm
  action_url: https://10.0.0.1/wapipe/actions
  intents:
    - {name: create_booking, description: a new booking, fields: {bus: string}, confirm: true}
`)
	cases := []struct {
		env, file, want string
	}{
		{"", sampleFile, sampleFile + ": assistant.action_url: must be https:// to a public address outside dev: http:// is allowed only with APP_ENV=dev\n"},
		{"prod", private, private + ": assistant.action_url: must be https:// to a public address outside dev: 10.0.0.1 is a private address\n"},
		{"staging", private, private + ": assistant.action_url: must be https:// to a public address outside dev: 10.0.0.1 is a private address\n"},
	}
	t.Setenv("LOG_HASH_KEY", "test-log-hash-key-0123456789abcdefghijklmnop")
	for _, tc := range cases {
		t.Setenv("APP_ENV", tc.env)
		for _, dry := range []bool{true, false} {
			args := e.args("apply", "-f", tc.file)
			if dry {
				args = append(args, "--dry-run")
			}
			out, errOut, err := cli(t, args...)
			if err == nil || out != "" {
				t.Errorf("APP_ENV=%q apply %s (dry %v): err %v, stdout %q; want refused", tc.env, tc.file, dry, err, out)
			}
			if errOut != tc.want {
				t.Errorf("APP_ENV=%q apply %s (dry %v): stderr\n%q, want\n%q", tc.env, tc.file, dry, errOut, tc.want)
			}
		}
	}
	if n := e.docs(t, store.TenantsCollection); n != 0 {
		t.Fatalf("%d tenants written by refused applies", n)
	}
	t.Setenv("APP_ENV", "dev")
	if out := mustCLI(t, e.args("apply", "-f", sampleFile)...); !strings.HasPrefix(out, "+ tenant: sunrise-bus\n") {
		t.Errorf("APP_ENV=dev apply of the sample: %q", out)
	}
}
