package usage_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/usage"
)

func TestMonth(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 23, 30, 0, 0, time.FixedZone("WITA", 8*3600)) // 15:30 UTC
	tests := []struct{ in, want string }{
		{"", "2026-11"},
		{"2026-11", "2026-11"},
		{"2025-01", "2025-01"},
		{"2026-12", ""},
		{"2026-13", ""},
		{"2026-1", ""},
		{"26-11", ""},
		{"2026-11-01", ""},
	}
	for _, tc := range tests {
		got, err := usage.Month(tc.in, now)
		if tc.want == "" {
			if ref, ok := refusal.As(err); !ok || ref.Code != refusal.InvalidRequest {
				t.Errorf("Month(%q) = %q, %v; want invalid_request", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Month(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestBuild: amounts exact, the total rounded to the cent, the budget and what remains.
func TestBuild(t *testing.T) {
	t.Parallel()
	l := store.Ledger{Period: "2026-11", Meta: map[string]store.CategoryUse{
		"marketing": {Messages: 3, Amount: 123_300_000_000}, "service": {Messages: 5},
	}, PromptTokens: 1000, AudioTokens: 200, OutputTokens: 150, LLM: 995_000_000}
	got := usage.Build(l, &tenant.Tenant{Budget: tenant.Budget{MonthlyUSD: "1"}})
	budget, remaining := "1.0000", "0.875705"
	want := usage.Report{Month: "2026-11", Currency: "USD",
		Meta: usage.MetaReport{ByCategory: map[string]usage.CategoryReport{
			"marketing": {Messages: 3, Amount: "0.1233"}, "service": {Messages: 5, Amount: "0.0000"}}, Amount: "0.1233"},
		LLM:   usage.LLMReport{PromptTokens: 1000, OutputTokens: 150, AudioTokens: 200, Amount: "0.000995"},
		Total: "0.12", Budget: &budget, Remaining: &remaining,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want, +got):\n%s", diff)
	}
}
