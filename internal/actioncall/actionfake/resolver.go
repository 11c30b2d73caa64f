package actionfake

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// Resolver is a DNS under the test's control for action.WithResolver and the apply check: it
// answers the addresses Set gave a name (any case, trailing dot ignored), and "no such host"
// for any other name. Set may change an answer between lookups (DNS rebinding). It is safe
// for concurrent use.
type Resolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups map[string]int
}

// NewResolver returns a resolver that knows no name.
func NewResolver() *Resolver {
	return &Resolver{names: map[string][]netip.Addr{}, lookups: map[string]int{}}
}

// Set makes name resolve to addrs ("10.0.0.1", "::1"…); it panics on an invalid address.
func (r *Resolver) Set(name string, addrs ...string) *Resolver {
	ips := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		ips[i] = netip.MustParseAddr(a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[canonical(name)] = ips
	return r
}

// Lookups returns how many times name was looked up.
func (r *Resolver) Lookups(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[canonical(name)]
}

// LookupNetIP answers as a DNS server would; network ("ip", "ip4", "ip6") filters the answer.
func (r *Resolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := canonical(host)
	r.lookups[name]++
	var out []netip.Addr
	for _, ip := range r.names[name] {
		if network == "ip" || (network == "ip4") == ip.Unmap().Is4() {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func canonical(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }
