package actioncall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Resolver looks up a host's addresses; *net.Resolver implements it. Tests answer what they
// need (a public-looking name that resolves to a private address).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrNotPublic: outside dev, the action URL is not https:// to a public address (a loopback,
// private, link-local, metadata or otherwise reserved address, or a name that resolves to one).
var ErrNotPublic = errors.New("action URL is not a public address")

// addrError is a refused address; its text names the host and why, never the URL's query.
type addrError struct{ reason string }

func (e *addrError) Error() string { return e.reason }
func (e *addrError) Unwrap() error { return ErrNotPublic }

func notPublic(format string, args ...any) error {
	return &addrError{reason: fmt.Sprintf(format, args...)}
}

// reserved are the IPv4 and IPv6 ranges that are not public beyond what netip.Addr's own
// predicates (loopback, private, link-local, multicast, unspecified) cover.
var reserved = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (shared)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (broadcast included)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
}

// embedsIPv4 are IPv6 ranges that carry an IPv4 address in their bits, which a gateway may
// reach: NAT64 (the last 32 bits) and 6to4 (bits 16 to 48). The embedded address is checked.
var (
	nat64  = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns nil when ip is a public unicast address, else an error (errors.Is
// ErrNotPublic) saying what kind of address it is. IPv4-mapped IPv6 (::ffff:10.0.0.1) is
// judged as its IPv4 address, and so are the IPv4 addresses inside NAT64 and 6to4 addresses.
func CheckAddr(ip netip.Addr) error {
	if what := addrKind(ip); what != "" {
		return notPublic("%s is %s", ip.WithZone(""), what)
	}
	return nil
}

// addrKind names the kind of a non-public address, or "" for a public one.
func addrKind(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip == netip.MustParseAddr("169.254.169.254"):
		// Link-local too; named because it is the usual target (the metadata server's tokens).
		return "the cloud metadata server's address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, r := range reserved {
		if r.prefix.Contains(ip) {
			return "a reserved address (" + r.what + ")"
		}
	}
	if ip.Is6() {
		b := ip.As16()
		for _, p := range nat64 {
			if p.Contains(ip) {
				if what := addrKind(netip.AddrFrom4([4]byte(b[12:16]))); what != "" {
					return "a NAT64 address of " + what
				}
			}
		}
		if sixTo4.Contains(ip) {
			if what := addrKind(netip.AddrFrom4([4]byte(b[2:6]))); what != "" {
				return "a 6to4 address of " + what
			}
		}
	}
	return ""
}

// checkHostName refuses names that are not public DNS names whatever they resolve to: the
// metadata server's name, local and internal zones, single labels (resolved through search
// domains: "metadata" reaches the metadata server on Google Cloud) and numeric forms that some
// resolvers read as an address (0x7f.1, 2130706433).
func checkHostName(host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	switch {
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return notPublic("%s is a loopback name", host)
	case h == "metadata.google.internal":
		return notPublic("%s is the cloud metadata server", host)
	case strings.HasSuffix(h, ".internal"), strings.HasSuffix(h, ".local"), strings.HasSuffix(h, ".home.arpa"):
		return notPublic("%s is a name in a private zone", host)
	case len(labels) == 1:
		return notPublic("%s is not a fully qualified name (a search domain could make it internal)", host)
	case last == "" || last[0] >= '0' && last[0] <= '9':
		return notPublic("%s is not a DNS name or an address", host)
	}
	return nil
}

// checkPublicForm checks what can be checked of a URL without DNS: https://, and a host that
// is a public address or a name that may be public.
func checkPublicForm(u *url.URL) error {
	if u.Scheme != "https" {
		return notPublic("http:// is allowed only with APP_ENV=dev")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return CheckAddr(ip)
	}
	return checkHostName(host)
}

// CheckPublicURL checks, as `wapipe tenants apply` does outside dev, that raw is an https://
// URL to a public address: a literal address must be public, and a name must resolve (with r;
// net.DefaultResolver when nil) to public addresses only. The error wraps ErrNotPublic, or
// ErrInvalidURL for a URL that is not an action URL at all, or says the name does not
// resolve. Calls are checked again when they are made (the address a name resolves to may
// change), so this check is an early answer for the operator, not the protection itself.
func CheckPublicURL(ctx context.Context, raw string, r Resolver) error {
	u, msg := checkURL(raw)
	if msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidURL, msg)
	}
	if err := checkPublicForm(u); err != nil {
		return err
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	_, err := resolvePublic(ctx, r, host)
	return err
}

// resolvePublic resolves host and returns its addresses when every one is public. A name
// with one non-public address among public ones is refused too: it is misconfigured at best.
func resolvePublic(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return nil, fmt.Errorf("%s does not resolve (no such host)", host)
		}
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s resolves to no address", host)
	}
	for _, ip := range ips {
		if what := addrKind(ip); what != "" {
			return nil, notPublic("%s resolves to %s, %s", host, ip.Unmap().WithZone(""), what)
		}
	}
	return ips, nil
}

// publicDialer dials only public addresses: it resolves the host itself, refuses the call when
// any address is not public, connects to the checked addresses by number, and checks the
// socket's address again in Control just before connecting. Because the address connected to
// is the one checked, a DNS answer that changes between check and connect (DNS rebinding)
// cannot slip through.
type publicDialer struct {
	resolver Resolver
	dialer   net.Dialer
}

func newPublicDialer(r Resolver) *publicDialer {
	d := &publicDialer{resolver: r}
	d.dialer = net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: controlPublic}
	return d
}

// controlPublic refuses a socket about to connect to an address that is not public.
func controlPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return notPublic("cannot check the address %q", address)
	}
	return CheckAddr(ap.Addr())
}

// DialContext is the transport's dial function.
func (d *publicDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(ip); err != nil {
			return nil, err
		}
		ips = []netip.Addr{ip}
	} else {
		if err := checkHostName(host); err != nil {
			return nil, err
		}
		if ips, err = resolvePublic(ctx, d.resolver, host); err != nil {
			return nil, err
		}
	}
	var first error
	for _, ip := range ips {
		c, err := d.dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}
