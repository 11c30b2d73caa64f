package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestShowTokenUsage: `tenants show` prints the month's LLM tokens (prompt, output) recorded
// for the tenant beside its call count.
func TestShowTokenUsage(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	file := writeFile(t, "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"200\", waba_id: \"300\"}\n")
	mustCLI(t, e.args("apply", "-f", file)...)
	period := turnstate.Period(time.Now())
	if show := mustCLI(t, e.args("show", "acme-bus")...); !strings.Contains(show, "llm_tokens:      0 prompt, 0 output in "+period+"\n") {
		t.Errorf("show before any call: no zero llm_tokens line in\n%s", show)
	}
	guard := store.NewGuard(store.NewDB(e.fs), store.Options{})
	ctx := context.Background()
	for i, id := range []string{"call-1", "call-2"} {
		if _, err := guard.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-bus", Period: period, CallID: id}); err != nil {
			t.Fatal(err)
		}
		if err := guard.RecordTokens(ctx, turnstate.TokenUse{TenantID: "acme-bus", Period: period, CallID: id, Prompt: 100 + i, Output: 20}); err != nil {
			t.Fatal(err)
		}
	}
	show := mustCLI(t, e.args("show", "acme-bus")...)
	if turnstate.Period(time.Now()) != period {
		t.Skip("the month changed during the test: show reads the new month's usage")
	}
	for _, want := range []string{"llm_usage:       2 calls in " + period, "llm_tokens:      201 prompt, 40 output in " + period + "\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("show: no %q in\n%s", want, show)
		}
	}
}
