package console

import (
	"bytes"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
)

// syncBuffer is a log sink for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsHoldNoMessageTextOrNumber takes every action, failing and succeeding, and checks the
// console's logs: no message text, no contact number, no wamid, no secret.
func TestLogsHoldNoMessageTextOrNumber(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	f := newFixture(t, false)
	f.deps.Logger = logging.New(&logs, logging.Options{Hasher: logging.DevHasher()})
	f.rebuild()
	const text = "my booking code is SECRET-4242"
	for _, fail := range []bool{false, true} {
		f.replier.err = nil
		if fail {
			f.replier.err = errBoom
			f.replay.err = errBoom
		}
		for _, p := range []string{"/conversations/conv_abc/reply", "/conversations/conv_abc/assign", "/conversations/conv_abc/close",
			"/failures/dl1/replay", "/tenants/acme-01/reconnect"} {
			f.post(t, p, url.Values{RequestIDField: {newRequestID()}, "text": {text}})
		}
	}
	f.tenants.err = errBoom
	f.get(t, "/tenants")
	f.post(t, "/search", url.Values{"q": {"wamid.HBgLFOUND"}})
	f.get(t, "/search?q=wamid.HBgLFOUND")
	out := logs.String()
	if n := logcheck.Check(t, out, []string{"6281234567890"}, []string{"wamid.in1"}); n == 0 {
		t.Fatal("no log lines")
	}
	for _, hidden := range []string{text, "SECRET-4242", secretCiphertext, "PRIVATE CUSTOMER TEXT", "state=acme-01"} {
		if strings.Contains(out, hidden) {
			t.Errorf("logs hold %q:\n%s", hidden, out)
		}
	}
	if !strings.Contains(out, `"event":"console_action_done"`) || !strings.Contains(out, `"event":"console_action_failed"`) {
		t.Errorf("logs lack the actions' events:\n%s", out)
	}
}
