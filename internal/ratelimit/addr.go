package ratelimit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr returns the key of the request's client address: an IPv4 address, or the /64 of an
// IPv6 one (a single host is commonly given a whole /64, so one address each would be a fresh
// bucket per request).
//
// With trustForwarded (Cloud Run, behind Google's front end) the address is the last entry of
// X-Forwarded-For: the one Google's front end appended. The entries before it are whatever the
// client sent and prove nothing. Without it (loopback, dev) or when the header holds no address,
// it is the connection's remote address.
func ClientAddr(r *http.Request, trustForwarded bool) string {
	if trustForwarded {
		if values := r.Header.Values("X-Forwarded-For"); len(values) > 0 {
			last := values[len(values)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
				return addrKey(a)
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return addrKey(a)
	}
	return host
}

func addrKey(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
