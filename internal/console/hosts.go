package console

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HostPolicy says which Host names the console answers. DNS rebinding points an attacker's name
// at the console's address (a dev console on loopback, or a local proxy) so that the attacker's
// page is same-origin with it; the Host the browser sends still names the attacker's host.
type HostPolicy struct {
	// Names are host or host:port values, compared without case (CONSOLE_HOSTS).
	Names []string
	// Loopback accepts localhost, 127.0.0.1 and [::1] with the port the request came in on (dev).
	Loopback bool
	// CloudRunService accepts the service's own run.app URLs, <service>-….run.app, both the
	// deterministic and the hash-based one (K_SERVICE, which Cloud Run sets). Cloud Run routes
	// a run.app name only to its own service, so such a Host reaching the container is ours.
	CloudRunService string
}

// Allows reports whether r names one of the console's hosts.
func (p HostPolicy) Allows(r *http.Request) bool {
	if p.allowsName(r.Host) {
		return true
	}
	if !p.Loopback {
		return false
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || !isLoopbackName(host) {
		return false
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	_, localPort, err := net.SplitHostPort(local.String())
	return err == nil && localPort == port
}

// allowsName reports whether host (a Host header, or a URL's host) is a configured name or the
// Cloud Run service's own.
func (p HostPolicy) allowsName(host string) bool {
	host = strings.ToLower(host)
	for _, n := range p.Names {
		if strings.EqualFold(n, host) {
			return true
		}
	}
	return p.CloudRunService != "" && strings.HasPrefix(host, strings.ToLower(p.CloudRunService)+"-") &&
		strings.HasSuffix(host, ".run.app") && !strings.Contains(host, ":")
}

// ServesURL reports whether aud is the https URL of one of the console's names: the audience of an
// ID token minted for the console (Cloud Run accepts its service URLs as audiences).
func (p HostPolicy) ServesURL(aud string) bool {
	u, err := url.Parse(aud)
	return err == nil && u.Scheme == "https" && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.User == nil &&
		p.allowsName(u.Host)
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
