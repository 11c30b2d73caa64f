package tenant

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestParseAPILimit (issue 35 item 7): limits.api sets the limit of the tenant's API keys on the
// api; a field left out stays nil (the api's API_RATE_PER_KEY or API_BURST_PER_KEY), and the file
// keeps the other limits' defaults.
func TestParseAPILimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		extra     string
		rate      *float64
		burst     *int
		wantRate  float64
		wantBurst int
	}{
		{"absent", "", nil, nil, 50, 1000},
		{"both", "limits:\n  api: {per_second: 5.5, burst: 200}\n", ptr(5.5), ptr(200), 5.5, 200},
		{"burst only", "limits:\n  api: {burst: 5000}\n", nil, ptr(5000), 50, 5000},
		{"beside the others", "limits:\n  sender: {max: 3, per: 1m}\n  api: {per_second: 1}\n", ptr(1.0), nil, 1, 1000},
		{"empty", "limits: {api: {}}\n", nil, nil, 50, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn, err := Parse([]byte(base + tt.extra))
			if err != nil {
				t.Fatalf("Parse:\n%v", err)
			}
			if diff := cmp.Diff(APILimit{PerSecond: tt.rate, Burst: tt.burst}, tn.Limits.API); diff != "" {
				t.Errorf("limits.api (-want, +got):\n%s", diff)
			}
			if rate, burst := tn.Limits.API.Or(50, 1000); rate != tt.wantRate || burst != tt.wantBurst {
				t.Errorf("Or(50, 1000) = %v, %d; want %v, %d", rate, burst, tt.wantRate, tt.wantBurst)
			}
			if tn.Limits.Conversation.Max != DefaultConversationMax {
				t.Errorf("limits.conversation.max %d, want the default %d", tn.Limits.Conversation.Max, DefaultConversationMax)
			}
			// Written back and read again, the same tenant.
			data, err := Marshal(tn)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse(Marshal):\n%v\n%s", err, data)
			}
			if diff := cmp.Diff(tn, again); diff != "" {
				t.Errorf("round trip (-want, +got):\n%s", diff)
			}
			if tt.rate == nil && tt.burst == nil && strings.Contains(string(data), "api:") {
				t.Errorf("an unset limits.api is written out:\n%s", data)
			}
		})
	}
}

// TestParseAPILimitProblems: a bad limits.api value is one line naming the field, its bounds and
// what leaving it out means, with the file's line: what `wapipe tenants apply` prints.
func TestParseAPILimitProblems(t *testing.T) {
	t.Parallel()
	rate := "limits.api.per_second: must be more than 0 and at most 10000: requests a second per API key (absent: the api's API_RATE_PER_KEY) (line 9)"
	burst := "limits.api.burst: must be 1 to 100000: requests at once per API key (absent: the api's API_BURST_PER_KEY) (line 10)"
	tests := []struct {
		name  string
		extra string
		want  []string
	}{
		{"zero rate", "limits:\n  api:\n    per_second: 0\n", []string{rate}},
		{"negative rate", "limits:\n  api:\n    per_second: -2\n", []string{rate}},
		{"rate too high", "limits:\n  api:\n    per_second: 50000\n", []string{rate}},
		{"infinite rate", "limits:\n  api:\n    per_second: .inf\n", []string{rate}},
		{"zero burst", "limits:\n  api:\n    per_second: 10\n    burst: 0\n", []string{burst}},
		{"burst too high", "limits:\n  api:\n    per_second: 10\n    burst: 1000000\n", []string{burst}},
		{"both", "limits:\n  api:\n    per_second: 0\n    burst: -1\n", []string{rate, burst}},
		{"burst not whole", "limits:\n  api:\n    burst: 2.5\n", []string{"limits.api.burst: must be a whole number (line 9)"}},
		{"unknown key", "limits:\n  api:\n    rate: 5\n", []string{"limits.api.rate: unknown key; limits.api takes per_second, burst (line 9)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(base + tt.extra))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("problems (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestDiffAPILimit: limits.api shows in what an apply changes (the CLI's output) only when a file
// sets it, an unset field as the api's variable.
func TestDiffAPILimit(t *testing.T) {
	t.Parallel()
	set := func(rate float64, burst int) func(*Tenant) {
		return func(t *Tenant) { t.Limits.API = APILimit{PerSecond: &rate, Burst: &burst} }
	}
	tests := []struct {
		name       string
		prev, next func(*Tenant)
		want       []string
	}{
		{"unset both sides", nil, nil, nil},
		{"set", nil, set(50, 1000), []string{
			"~ limits.api.per_second: default (API_RATE_PER_KEY) -> 50",
			"~ limits.api.burst: default (API_BURST_PER_KEY) -> 1000",
		}},
		{"burst changed", set(50, 1000), set(50, 2000), []string{"~ limits.api.burst: 1000 -> 2000"}},
		{"removed", set(50, 1000), func(t *Tenant) { t.Limits.API = APILimit{} }, []string{
			"~ limits.api.per_second: 50 -> default (API_RATE_PER_KEY)",
			"~ limits.api.burst: 1000 -> default (API_BURST_PER_KEY)",
		}},
		{"same values", set(2.5, 10), set(2.5, 10), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prev, next := contractTenant(), contractTenant()
			for _, f := range []struct {
				tn     *Tenant
				change func(*Tenant)
			}{{prev, tt.prev}, {next, tt.next}} {
				if f.change != nil {
					f.change(f.tn)
				}
			}
			if diff := cmp.Diff(tt.want, lines(Diff(prev, next)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Diff (-want, +got):\n%s", diff)
			}
		})
	}
	created := contractTenant()
	set(7, 70)(created)
	got := lines(Diff(nil, created))
	for _, want := range []string{"+ limits.api.per_second: 7", "+ limits.api.burst: 70"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("Diff(nil, tenant with limits.api) lacks %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
}
