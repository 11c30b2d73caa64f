package graph

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestNotSent: errors that prove the request never left (DNS, dial, TLS handshake) are NotSent, so
// a send may be retried at once; a request that reached the server and then hung or broke is not:
// its outcome is unknown.
func TestNotSent(t *testing.T) {
	t.Parallel()
	refused := func(t *testing.T) (string, *http.Client) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		return "http://" + addr, nil
	}
	dnsFails := func(*testing.T) (string, *http.Client) {
		tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "graph.example", IsNotFound: true}}
		}}
		return "https://graph.example", &http.Client{Transport: tr}
	}
	badCertificate := func(t *testing.T) (string, *http.Client) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			t.Error("the request reached the server despite a certificate the client does not trust")
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL, &http.Client{Timeout: 5 * time.Second} // does not trust the test CA
	}
	hangs := func(t *testing.T) (string, *http.Client) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		return srv.URL, &http.Client{Timeout: 100 * time.Millisecond}
	}
	dropped := func(t *testing.T) (string, *http.Client) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}))
		t.Cleanup(srv.Close)
		return srv.URL, nil
	}
	tests := []struct {
		name        string
		server      func(*testing.T) (string, *http.Client)
		wantNotSent bool
	}{
		{"connection refused", refused, true},
		{"DNS failure", dnsFails, true},
		{"TLS handshake failure", badCertificate, true},
		{"server hangs", hangs, false},
		{"connection dropped after the request", dropped, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, hc := tc.server(t)
			c, err := NewClient(url, testToken, hc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
			if err == nil {
				t.Fatal("send succeeded")
			}
			if got := NotSent(err); got != tc.wantNotSent {
				t.Errorf("NotSent = %v, want %v (%v)", got, tc.wantNotSent, err)
			}
			if Classify(err) != Temporary {
				t.Errorf("Classify = %s, want temporary (%v)", Classify(err), err)
			}
		})
	}
}
