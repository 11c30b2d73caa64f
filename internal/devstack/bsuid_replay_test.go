package devstack_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/logging/logcheck"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestEveryIdentityShapeEndToEnd replays, through the real webhook, the Cloud Tasks emulator and
// the worker, a payload of every row of the table in shared/meta/usernames.md (the parser's
// testdata/bsuid_*.json: messages, statuses, echoes, preferences, calls, revokes and edits by
// BSUID alone, identity changes, a message that names nobody), each delivered twice as Meta
// redelivers. None leaves a dead letter or a panic, the message that names nobody is recorded
// with a WARNING and not answered, and no identifier appears in a log line.
func TestEveryIdentityShapeEndToEnd(t *testing.T) {
	t.Parallel()
	e := startEventsStack(t)
	files, err := filepath.Glob("../whatsapp/testdata/bsuid_*.json")
	if err != nil || len(files) < 15 {
		t.Fatalf("the parser's BSUID payloads: %v (%d files)", err, len(files))
	}
	var ids []string
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, identifiersIn(t, body)...)
		post(t, e.st, body)
		post(t, e.st, body)
	}
	e.idle(t)
	if rep := e.health(t); rep.DeadLetters != 0 {
		dls, _ := store.NewDeadLetters(e.db, store.Options{}).ListDeadLetters(t.Context(), true, 20)
		for _, d := range dls {
			t.Logf("dead letter: %s retry %d: %s", d.Path, d.RetryCount, d.LastError)
		}
		t.Errorf("%d dead letters after every identity shape, want none", rep.DeadLetters)
	}
	logs := e.logs.String()
	if strings.Contains(logs, `"event":"panic_recovered"`) {
		t.Error("a payload made a handler panic")
	}
	testenv.Eventually(t, eventsWait, func() bool { return strings.Contains(e.logs.String(), `"event":"message_no_sender"`) },
		"the message that names nobody was not recorded with its WARNING")
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"event":"message_no_sender"`) && !strings.Contains(line, `"severity":"WARNING"`) {
			t.Errorf("message_no_sender not at WARNING: %s", line)
		}
	}
	logcheck.Check(t, logs, nil, ids)
}

// bsuidLike finds the BSUIDs, parent BSUIDs and usernames of a payload, to look for in the logs.
var bsuidLike = regexp.MustCompile(`^[A-Z]{2}\.(ENT\.)?[A-Za-z0-9]+$`)

// identifiersIn lists the string values of body that identify people: BSUIDs and usernames.
func identifiersIn(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			if bsuidLike.MatchString(x) || key == "username" {
				out = append(out, x)
			}
		}
	}
	walk("", v)
	return out
}
