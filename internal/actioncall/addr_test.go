package actioncall_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/actioncall/actionfake"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ip   string
		want string // "" for public, else a word of the reason
	}{
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"::1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"fd20:ce::254", "private"}, // the metadata server over IPv6
		{"169.254.169.254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.254", "carrier-grade NAT"},
		{"0.1.2.3", "this network"},
		{"255.255.255.255", "reserved"},
		{"198.18.0.1", "benchmarking"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"::ffff:10.0.0.1", "private"},
		{"::10.0.0.1", "IPv4-compatible"},
		{"64:ff9b::a00:1", "NAT64"},     // 10.0.0.1
		{"64:ff9b::a9fe:a9fe", "NAT64"}, // 169.254.169.254
		{"2002:7f00:1::", "6to4"},       // 127.0.0.1
		{"2001:0:4136:e378::1", "Teredo"},
		{"2001:db8::1", "documentation"},
	}
	for _, tc := range cases {
		t.Run(tc.ip, func(t *testing.T) {
			t.Parallel()
			err := actioncall.CheckAddr(netip.MustParseAddr(tc.ip))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckAddr = %v, want nil (public)", err)
			case tc.want != "" && (!errors.Is(err, actioncall.ErrNotPublic) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckAddr = %v, want ErrNotPublic naming %q", err, tc.want)
			}
		})
	}
}

// testResolver knows a public name, names that resolve to addresses that are not public, and
// nothing else.
func testResolver() *actionfake.Resolver {
	return actionfake.NewResolver().
		Set("ops.example.com", "93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c").
		Set("loopback.example.com", "127.0.0.1").
		Set("internal.example.com", "10.0.0.1").
		Set("mixed.example.com", "93.184.215.14", "192.168.0.10").
		Set("meta.example.com", "169.254.169.254").
		Set("mapped.example.com", "::ffff:127.0.0.1")
}

// TestCheckPublicURL is the check `wapipe tenants apply` makes outside dev.
func TestCheckPublicURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url  string
		want error  // nil: accepted
		says string // in the error's text
	}{
		{"https://ops.example.com/wapipe/actions", nil, ""},
		{"https://OPS.Example.com./a?x=1", nil, ""},
		{"https://93.184.215.14:8443/a", nil, ""},
		{"http://ops.example.com/a", actioncall.ErrInvalidURL, "must be an absolute https:// URL"},
		{"http://127.0.0.1:8095/wapipe/actions", actioncall.ErrNotPublic, "http:// is allowed only with APP_ENV=dev"},
		{"https://127.0.0.1/a", actioncall.ErrNotPublic, "127.0.0.1 is a loopback address"},
		{"https://10.0.0.1/a", actioncall.ErrNotPublic, "10.0.0.1 is a private address"},
		{"https://169.254.169.254/computeMetadata/v1/", actioncall.ErrNotPublic, "metadata server"},
		{"https://[::1]/a", actioncall.ErrNotPublic, "::1 is a loopback address"},
		{"https://[::ffff:127.0.0.1]/a", actioncall.ErrNotPublic, "loopback"},
		{"https://100.64.0.1/a", actioncall.ErrNotPublic, "carrier-grade NAT"},
		{"https://metadata.google.internal/computeMetadata/v1/", actioncall.ErrNotPublic, "metadata server"},
		{"https://METADATA.google.internal./a", actioncall.ErrNotPublic, "metadata server"},
		{"https://metadata/a", actioncall.ErrNotPublic, "not a fully qualified name"},
		{"https://localhost/a", actioncall.ErrNotPublic, "loopback name"},
		{"https://api.localhost/a", actioncall.ErrNotPublic, "loopback name"},
		{"https://vm-1.c.project.internal/a", actioncall.ErrNotPublic, "private zone"},
		{"https://printer.local/a", actioncall.ErrNotPublic, "private zone"},
		{"https://0x7f.1/a", actioncall.ErrNotPublic, "not a DNS name"},
		{"https://loopback.example.com/a", actioncall.ErrNotPublic, "loopback.example.com resolves to 127.0.0.1, a loopback address"},
		{"https://internal.example.com/a", actioncall.ErrNotPublic, "resolves to 10.0.0.1, a private address"},
		{"https://mixed.example.com/a", actioncall.ErrNotPublic, "resolves to 192.168.0.10"},
		{"https://meta.example.com/a", actioncall.ErrNotPublic, "metadata server"},
		{"https://mapped.example.com/a", actioncall.ErrNotPublic, "resolves to 127.0.0.1"},
		{"https://nowhere.example.com/a", errNotResolved, "nowhere.example.com does not resolve (no such host)"},
		{"ftp://ops.example.com/a", actioncall.ErrInvalidURL, "https://"},
		{"https://u:p@ops.example.com/a", actioncall.ErrInvalidURL, "user or password"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			err := actioncall.CheckPublicURL(context.Background(), tc.url, testResolver())
			switch {
			case tc.want == nil:
				if err != nil {
					t.Errorf("CheckPublicURL = %v, want nil", err)
				}
				return
			case tc.want == errNotResolved:
				if err == nil || errors.Is(err, actioncall.ErrNotPublic) {
					t.Errorf("CheckPublicURL = %v, want a resolution error", err)
				}
			case !errors.Is(err, tc.want):
				t.Errorf("CheckPublicURL = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("CheckPublicURL = %q, want it to say %q", err, tc.says)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckPublicURL = %q, want one line", err)
			}
		})
	}
}

// errNotResolved marks the cases where the name does not resolve (not ErrNotPublic).
var errNotResolved = errors.New("does not resolve")

// countingListener counts the connections it accepts: the proof that a refused call made none.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func listen(t *testing.T) (*countingListener, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{Listener: inner}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	_, port, _ := net.SplitHostPort(inner.Addr().String())
	return l, port
}

// TestCallRefusesNonPublicAddresses: outside dev, a call whose URL or DNS answer points at an
// address that is not public is Failed (permanent: the worker dead-letters it, no retry) and
// makes no connection, even though something listens there.
func TestCallRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	l, port := listen(t)
	cases := []struct {
		name, url, says string
	}{
		{"public-looking name resolving to loopback", "https://loopback.example.com:" + port + "/a?token=s3cr3t", "loopback.example.com resolves to 127.0.0.1"},
		{"name resolving to a private address", "https://internal.example.com:" + port + "/a", "10.0.0.1, a private address"},
		{"name resolving to the metadata server", "https://meta.example.com:" + port + "/a", "metadata server"},
		{"name resolving to a mapped loopback", "https://mapped.example.com:" + port + "/a", "loopback"},
		{"name with one private address among public ones", "https://mixed.example.com:" + port + "/a", "192.168.0.10"},
		{"literal loopback", "https://127.0.0.1:" + port + "/a", "loopback"},
		{"literal IPv6 loopback", "https://[::1]:" + port + "/a", "loopback"},
		{"http to loopback", "http://127.0.0.1:" + port + "/a", "http:// is allowed only"},
		{"metadata name", "https://metadata.google.internal:" + port + "/a", "metadata server"},
		{"localhost", "https://localhost:" + port + "/a", "loopback name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := actioncall.NewClient(actioncall.WithResolver(testResolver()))
			got, err := c.Call(context.Background(), tc.url, []byte(testSecret), sampleRequest())
			if diff := cmp.Diff(actioncall.Result{Kind: actioncall.Failed}, got); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
			if !errors.Is(err, actioncall.ErrNotPublic) || !errors.Is(err, actioncall.ErrPermanent) {
				t.Errorf("err = %v, want ErrNotPublic and ErrPermanent", err)
			}
			if err != nil && (!strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "s3cr3t")) {
				t.Errorf("err = %q, want it to say %q and not quote the query", err, tc.says)
			}
			checkKindMatchesErr(t, got, err)
		})
	}
	t.Cleanup(func() {
		if n := l.accepted.Load(); n != 0 {
			t.Errorf("%d connections reached the listener, want 0", n)
		}
	})
}

// TestCallChecksTheAddressAtCallTime: a name that was public when the tenant was applied and
// now resolves to loopback (DNS rebinding) is refused when the call is made.
func TestCallChecksTheAddressAtCallTime(t *testing.T) {
	t.Parallel()
	l, port := listen(t)
	r := actionfake.NewResolver().Set("rebind.example.com", "93.184.215.14")
	url := "https://rebind.example.com:" + port + "/a"
	if err := actioncall.CheckPublicURL(context.Background(), url, r); err != nil {
		t.Fatalf("apply-time check = %v, want nil (public then)", err)
	}
	r.Set("rebind.example.com", "127.0.0.1")
	got, err := actioncall.NewClient(actioncall.WithResolver(r)).Call(context.Background(), url, []byte(testSecret), sampleRequest())
	if got.Kind != actioncall.Failed || !errors.Is(err, actioncall.ErrNotPublic) {
		t.Errorf("Call = %s, %v; want failed, ErrNotPublic", got.Kind, err)
	}
	if n := r.Lookups("rebind.example.com"); n != 2 {
		t.Errorf("%d lookups, want 2: the call resolves the name again", n)
	}
	if n := l.accepted.Load(); n != 0 {
		t.Errorf("%d connections reached the listener, want 0", n)
	}
}

// TestCallUnresolvableNameIsRetry: a name that does not resolve may resolve later (a DNS
// outage): the call is retried, and the worker gives up on the last attempt.
func TestCallUnresolvableNameIsRetry(t *testing.T) {
	t.Parallel()
	c := actioncall.NewClient(actioncall.WithResolver(actionfake.NewResolver()))
	got, err := c.Call(context.Background(), "https://nowhere.example.com/a", []byte(testSecret), sampleRequest())
	if got.Kind != actioncall.Retry || errors.Is(err, actioncall.ErrNotPublic) {
		t.Errorf("Call = %s, %v; want retry, not ErrNotPublic", got.Kind, err)
	}
	checkKindMatchesErr(t, got, err)
}
