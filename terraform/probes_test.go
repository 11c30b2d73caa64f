package terraform

import (
	"math/big"
	"testing"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/wapipe/wapipe/internal/service"
)

// maxStartupSeconds is Cloud Run's cap on a startup probe's period_seconds x failure_threshold.
const maxStartupSeconds = 240

// TestProbes (issue 35 item 8): every service's startup probe is the startup-only path
// (service.StartupPath: 503 until the warm-up has exercised the clients) with room for the
// warm-up's retries (at least a minute, at most Cloud Run's cap), and its liveness probe is
// /healthz, which touches no client, so that a Firestore blip does not restart instances.
func TestProbes(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	for name, addr := range services {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := m.container(t, addr)
			for _, want := range []struct{ probe, path string }{
				{"startup_probe", service.StartupPath},
				{"liveness_probe", "/healthz"},
			} {
				probes := childBlocks(c.Body, want.probe)
				if len(probes) != 1 {
					t.Errorf("%s: want one %s", addr, want.probe)
					continue
				}
				var path string
				if g := childBlocks(probes[0].Body, "http_get"); len(g) == 1 {
					path, _ = literalString(attrExpr(g[0].Body, "path"))
				}
				if path != want.path {
					t.Errorf("%s: %s http_get path %q, want %q", addr, want.probe, path, want.path)
				}
			}
			p := childBlocks(c.Body, "startup_probe")
			if len(p) != 1 {
				return
			}
			period, threshold := m.number(t, p[0].Body, "period_seconds"), m.number(t, p[0].Body, "failure_threshold")
			if window := period * threshold; window < 60 || window > maxStartupSeconds {
				t.Errorf("%s: startup_probe allows %d s (period_seconds %d x failure_threshold %d), want 60 to %d",
					addr, window, period, threshold, maxStartupSeconds)
			}
		})
	}
}

// number is the whole number that attribute name of body holds; the test fails when it is not
// one.
func (m *module) number(t *testing.T, body *hclsyntax.Body, name string) int64 {
	t.Helper()
	e := attrExpr(body, name)
	if e == nil {
		t.Fatalf("no %s", name)
	}
	v, err := m.eval(e, nil)
	if err != nil || v.Type() != cty.Number {
		t.Fatalf("%s = %s: want a number (%v)", name, m.text(e), err)
	}
	n, acc := v.AsBigFloat().Int64()
	if acc != big.Exact {
		t.Fatalf("%s = %s: want a whole number", name, m.text(e))
	}
	return n
}
