package terraform

import (
	"testing"
)

// TestCallersReachTheInternalWorker: the worker's ingress is internal only, and the api and the
// console call its tenant routes. Cloud Run counts such a call as internal only when it leaves
// through a VPC network with all traffic routed, on a subnet with Private Google Access; their
// internet egress then needs Cloud NAT on that subnet. The worker itself needs no VPC.
func TestCallersReachTheInternalWorker(t *testing.T) {
	t.Parallel()
	m := loadModule(t)
	const subnet = "google_compute_subnetwork.run_egress"
	for _, svc := range []string{"api", "console"} {
		tmpl := childBlocks(m.resources[services[svc]].Body, "template")
		if len(tmpl) != 1 {
			t.Fatalf("%s: want one template block", services[svc])
		}
		vpc := childBlocks(tmpl[0].Body, "vpc_access")
		if len(vpc) != 1 {
			t.Errorf("%s: no vpc_access: its calls to the worker would not be internal", services[svc])
			continue
		}
		if egress, _ := literalString(attrExpr(vpc[0].Body, "egress")); egress != "ALL_TRAFFIC" {
			t.Errorf("%s: vpc_access.egress = %q, want ALL_TRAFFIC (the worker's run.app URL is not a private range)", services[svc], egress)
		}
		nics := childBlocks(vpc[0].Body, "network_interfaces")
		if len(nics) != 1 || m.text(attrExpr(nics[0].Body, "subnetwork")) != subnet+".id" {
			t.Errorf("%s: vpc_access must use %s", services[svc], subnet)
		}
	}
	tmpl := childBlocks(m.resources[services["worker"]].Body, "template")
	if len(tmpl) == 1 && len(childBlocks(tmpl[0].Body, "vpc_access")) != 0 {
		t.Errorf("%s: has vpc_access; it needs none", services["worker"])
	}
	sub := m.resources[subnet]
	if sub == nil {
		t.Fatalf("no %s", subnet)
	}
	if got := m.text(attrExpr(sub.Body, "private_ip_google_access")); got != "true" {
		t.Errorf("%s: private_ip_google_access = %s, want true (run.app and Google APIs from the VPC)", subnet, got)
	}
	nat := m.resources["google_compute_router_nat.wapipe"]
	if nat == nil {
		t.Fatal("no Cloud NAT: the api's calls to Graph would have no route to the internet")
	}
	subs := childBlocks(nat.Body, "subnetwork")
	if len(subs) != 1 || m.text(attrExpr(subs[0].Body, "name")) != subnet+".id" {
		t.Errorf("google_compute_router_nat.wapipe: must NAT %s", subnet)
	}
}
