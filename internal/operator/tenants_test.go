package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestMain shares one Firestore emulator (the environment's) with the tests that apply tenants.
func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// actionTenant is a tenant file in mode llm whose intents call actionURL.
func actionTenant(id, number, actionURL string) []byte {
	return []byte(fmt.Sprintf(`id: %s
name: Acme
language: en
audience: public
phone_numbers:
  - {phone_number_id: %q, waba_id: "310000000000001"}
assistant:
  mode: llm
  action_url: %s
  intents:
    - {name: create_booking, description: a new booking, fields: {bus: string}, confirm: true}
`, id, number, actionURL))
}

// TestApplyRefusesActionURLsThatAreNotPublic (issue 22, item 6): outside dev, apply refuses an
// action URL that is not https:// to a public address, with one line naming the field, and
// writes nothing; in dev the local stack's loopback URL is accepted.
func TestApplyRefusesActionURLsThatAreNotPublic(t *testing.T) {
	t.Parallel()
	fs, _ := testenv.Firestore(t)
	ts := store.NewTenants(store.NewDB(fs), store.Options{})
	resolver := actionfake.NewResolver().
		Set("ops.example.com", "93.184.215.14").
		Set("loopback.example.com", "127.0.0.1").
		Set("intranet.example.com", "10.20.30.40", "93.184.215.14")
	prod := &operator.Tenants{Store: ts, Resolver: resolver}
	dev := &operator.Tenants{Store: ts, Resolver: resolver, Dev: true}
	cases := []struct {
		name string
		ops  *operator.Tenants
		url  string
		says string // "" when accepted
	}{
		{"http", prod, "http://127.0.0.1:8095/wapipe/actions", "http:// is allowed only with APP_ENV=dev"},
		{"http to a public name", prod, "http://ops.example.com/a", "must be an absolute https:// URL"},
		{"loopback", prod, "https://127.0.0.1/a", "127.0.0.1 is a loopback address"},
		{"private", prod, "https://10.0.0.1/a", "10.0.0.1 is a private address"},
		{"metadata address", prod, "https://169.254.169.254/computeMetadata/v1/", "169.254.169.254 is the cloud metadata server's address"},
		{"IPv6 loopback", prod, "https://[::1]/a", "::1 is a loopback address"},
		{"metadata name", prod, "https://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is the cloud metadata server"},
		{"name resolving to loopback", prod, "https://loopback.example.com/a", "loopback.example.com resolves to 127.0.0.1, a loopback address"},
		{"name resolving to a private address too", prod, "https://intranet.example.com/a", "resolves to 10.20.30.40, a private address"},
		{"name that does not resolve", prod, "https://nowhere.example.com/a", "nowhere.example.com does not resolve (no such host)"},
		{"public name", prod, "https://ops.example.com/wapipe/actions", ""},
		{"public address", prod, "https://93.184.215.14/a", ""},
		{"loopback in dev", dev, "http://127.0.0.1:8095/wapipe/actions", ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := fmt.Sprintf("acme-url-%d", i)
			_, err := tc.ops.Apply(context.Background(), actionTenant(id, fmt.Sprintf("21000000000%04d", i), tc.url), false)
			_, getErr := ts.Get(context.Background(), id)
			if tc.says == "" {
				if err != nil || getErr != nil {
					t.Fatalf("Apply = %v (then Get = %v), want the tenant applied", err, getErr)
				}
				return
			}
			var ps tenant.Problems
			if !errors.As(err, &ps) || len(ps) != 1 {
				t.Fatalf("Apply = %v, want one problem", err)
			}
			line := ps[0].String()
			if !strings.HasPrefix(line, "assistant.action_url: ") || !strings.Contains(line, tc.says) || strings.Contains(line, "\n") {
				t.Errorf("problem %q, want one line on assistant.action_url saying %q", line, tc.says)
			}
			if !errors.Is(getErr, store.ErrNotFound) {
				t.Errorf("after a refused apply Get = %v, want not found: nothing written", getErr)
			}
		})
	}
}

// TestApplyDryRunChecksTheActionURL: --dry-run refuses what apply would refuse.
func TestApplyDryRunChecksTheActionURL(t *testing.T) {
	t.Parallel()
	ops := &operator.Tenants{Resolver: actionfake.NewResolver()} // no store: refused before it
	_, err := ops.Apply(context.Background(), actionTenant("acme-dry", "210000000009999", "https://10.0.0.1/a"), true)
	var ps tenant.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps[0].Message, "private address") {
		t.Errorf("dry-run Apply = %v, want the private address refused", err)
	}
}
