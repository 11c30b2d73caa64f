package identity

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// How a request's identity was established.
const (
	ViaIAP      = "iap"
	ViaIDToken  = "id_token"
	ViaLoopback = "loopback"
)

// Identity is who a request comes from: Email is empty only for a loopback caller in dev.
type Identity struct {
	Email string
	Via   string
}

// ErrUnauthenticated: the request carries no identity this service can verify.
var ErrUnauthenticated = errors.New("no verified identity: neither an IAP assertion nor an ID token")

// Verifier checks one token and returns the email it was issued for.
type Verifier interface {
	Verify(ctx context.Context, raw string) (string, error)
}

// Authenticator finds a request's verified identity. The first credential the request carries
// decides, in this order: IAP's assertion (when IAP is configured), the ID token Cloud Run's IAM
// check accepted, then, in dev, a loopback caller. A credential that fails is a refusal, not a
// reason to try the next one.
type Authenticator struct {
	// IAP verifies X-Goog-IAP-JWT-Assertion; nil when no IAP fronts the service, and the header is
	// then ignored (anyone can send it).
	IAP Verifier
	// IDToken verifies the bearer token; nil when none is expected.
	IDToken Verifier
	// TrustLoopback lets a caller on a loopback address in without a token (dev only).
	TrustLoopback bool
}

// Authenticate returns the request's identity, or an error saying why there is none.
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	ctx := r.Context()
	if raw := r.Header.Get(IAPHeader); raw != "" && a.IAP != nil {
		email, err := a.IAP.Verify(ctx, raw)
		if err != nil {
			return Identity{}, err
		}
		return checked(email, ViaIAP)
	}
	if raw := BearerToken(r); raw != "" && a.IDToken != nil {
		email, err := a.IDToken.Verify(ctx, raw)
		if err != nil {
			return Identity{}, err
		}
		return checked(email, ViaIDToken)
	}
	if a.TrustLoopback && FromLoopback(r) {
		return Identity{Via: ViaLoopback}, nil
	}
	return Identity{}, ErrUnauthenticated
}

// checked refuses an email no one could have been verified for (empty, oversized, or with
// characters an address does not have), so what the audit records is always an address.
func checked(email, via string) (Identity, error) {
	if email == "" || len(email) > 320 || !strings.Contains(email, "@") || strings.ContainsAny(email, " \t\r\n<>\"") {
		return Identity{}, fmt.Errorf("%s: not an email address", via)
	}
	return Identity{Email: email, Via: via}, nil
}

// BearerToken returns the token Cloud Run's IAM check accepted. A caller may authenticate to Cloud
// Run with X-Serverless-Authorization; Cloud Run then checks that header (and removes its
// signature) and passes Authorization on untouched, so Authorization proves nothing next to it.
func BearerToken(r *http.Request) string {
	v := r.Header.Get("X-Serverless-Authorization")
	if v == "" {
		v = r.Header.Get("Authorization")
	}
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// FromLoopback reports whether the request's peer is on a loopback address.
func FromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
