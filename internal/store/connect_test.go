package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// TestCheckPhoneNumbersWritesNothing: the check Embedded Signup runs before it subscribes names
// each number another tenant owns, accepts the tenant's own and new numbers, and writes nothing.
func TestCheckPhoneNumbersWritesNothing(t *testing.T) {
	t.Parallel()
	s, _ := newTenants(t)
	ctx := context.Background()
	mustApply(t, s, simpleTenant(t, "acme", "111"))
	mustApply(t, s, simpleTenant(t, "other", "222"))
	cases := []struct {
		name    string
		numbers []string
		foreign int
	}{
		{"own number", []string{"111"}, 0},
		{"new number", []string{"333"}, 0},
		{"another tenant's", []string{"111", "222", "333"}, 1},
		{"bad id", []string{"a/b"}, 1},
	}
	for _, c := range cases {
		var nums []tenant.PhoneNumber
		for _, n := range c.numbers {
			nums = append(nums, tenant.PhoneNumber{PhoneNumberID: n, WABAID: "900"})
		}
		err := s.CheckPhoneNumbers(ctx, "acme", nums)
		var ps tenant.Problems
		if got := 0; errors.As(err, &ps) {
			got = len(ps)
			if got != c.foreign {
				t.Errorf("%s: %d problems (%v), want %d", c.name, got, ps, c.foreign)
			}
		} else if err != nil || c.foreign != 0 {
			t.Errorf("%s: %v, want %d problems", c.name, err, c.foreign)
		}
	}
	if got := owner(t, s, "333"); got != "" {
		t.Errorf("the check wrote number 333 to %q", got)
	}
}

// TestConnectStateUsed: a state reads as used only after UseConnectState, which works once.
func TestConnectStateUsed(t *testing.T) {
	t.Parallel()
	s, clk := newTenants(t)
	ctx := context.Background()
	if used, err := s.ConnectStateUsed(ctx, "n1"); err != nil || used {
		t.Fatalf("fresh state: used %v, %v", used, err)
	}
	if err := s.UseConnectState(ctx, "n1", "acme", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if used, err := s.ConnectStateUsed(ctx, "n1"); err != nil || !used {
		t.Fatalf("used state: used %v, %v", used, err)
	}
	if err := s.UseConnectState(ctx, "n1", "acme", clk.Now().Add(time.Hour)); !errors.Is(err, store.ErrStateUsed) {
		t.Fatalf("second use: %v, want ErrStateUsed", err)
	}
}

// TestWABAGrants: a granted account is pending once (a second login keeps its first time), an
// approval moves it out of the pending list, and approving an account never granted records it.
func TestWABAGrants(t *testing.T) {
	t.Parallel()
	s, clk := newTenants(t)
	ctx := context.Background()
	mustApply(t, s, simpleTenant(t, "acme", "111"))
	first := clk.Now()
	if err := s.RecordWABAGrants(ctx, "acme", []string{"w1", "w2"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	if err := s.RecordWABAGrants(ctx, "acme", []string{"w1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.PendingWABAGrants(ctx, "acme")
	want := []store.WABAGrant{{WABAID: "w1", Status: store.GrantPending, GrantedAt: first}, {WABAID: "w2", Status: store.GrantPending, GrantedAt: first}}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Fatalf("pending (-want, +got) %v:\n%s", err, diff)
	}
	if err := s.ApproveWABAGrant(ctx, "acme", "w1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ApproveWABAGrant(ctx, "acme", "w3"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordWABAGrants(ctx, "acme", []string{"w1"}); err != nil {
		t.Fatal(err)
	}
	got, err = s.PendingWABAGrants(ctx, "acme")
	if err != nil || len(got) != 1 || got[0].WABAID != "w2" {
		t.Fatalf("pending after approvals: %+v %v", got, err)
	}
	if g, err := s.GetWABAGrant(ctx, "acme", "w1"); err != nil || g.Status != store.GrantApproved || !g.GrantedAt.Equal(first) {
		t.Fatalf("w1 after approval: %+v %v", g, err)
	}
	if _, err := s.GetWABAGrant(ctx, "acme", "w9"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("never granted: %v", err)
	}
}
