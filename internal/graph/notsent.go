package graph

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http/httptrace"
	"sync/atomic"
)

// connTrace watches one request's connection: whether the transport began to make one (DNS,
// dial, TLS) and whether it got one. A request for which no connection was ever obtained cannot
// have had a byte written to Meta.
type connTrace struct {
	dialing atomic.Bool
	gotConn atomic.Bool
}

// withTrace returns ctx with hooks that fill in ct.
func (ct *connTrace) withTrace(ctx context.Context) context.Context {
	dialing := func() { ct.dialing.Store(true) }
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { dialing() },
		ConnectStart:      func(string, string) { dialing() },
		TLSHandshakeStart: dialing,
		GotConn:           func(httptrace.GotConnInfo) { ct.gotConn.Store(true) },
	})
}

// notSent reports whether the failed request provably never left: no connection was obtained for
// it, and either the transport was seen making one or the error itself is a DNS, dial or TLS
// handshake failure (a transport that reports no trace events).
func (ct *connTrace) notSent(err error) bool {
	if ct.gotConn.Load() {
		return false
	}
	return ct.dialing.Load() || isConnectError(err)
}

// isConnectError reports whether err is a failure to establish a connection: name resolution,
// dialing, or the TLS handshake.
func isConnectError(err error) bool {
	var (
		dnsErr      *net.DNSError
		opErr       *net.OpError
		recordErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		verifyErr   *tls.CertificateVerificationError
		authorityEr x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidErr  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dnsErr):
		return true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return true
	case errors.As(err, &recordErr), errors.As(err, &alertErr), errors.As(err, &verifyErr),
		errors.As(err, &authorityEr), errors.As(err, &hostnameErr), errors.As(err, &invalidErr):
		return true
	}
	return false
}

// NotSent reports whether err proves the request never reached Meta: the connection could not be
// made (DNS, dial or TLS handshake failed), so nothing was sent and a retry may send at once. A
// timeout or a broken connection after that leaves the outcome unknown: NotSent is false.
func NotSent(err error) bool {
	var ge *Error
	return errors.As(err, &ge) && ge.NotSent
}
