package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestTriggerUsernameUser: --user-id, --no-phone, --username and --name make the message of a
// user with a username who did not share their phone, as Meta sends it: from_user_id and no
// from, contacts[] with user_id, profile.username and profile.name and no wa_id. --no-phone
// without --user-id, and a --user-id that is no BSUID, are usage errors.
func TestTriggerUsernameUser(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Write([]byte(`{"status":"accepted"}`))
	}))
	t.Cleanup(hook.Close)
	const userID = "US.13491208655302741918"

	out := mustCLI(t, "trigger", "--url", hook.URL, "--secret", "s", "--user-id", userID, "--no-phone", "--username", "julian",
		"--name", "Julian", "--text", "hello")
	if !strings.Contains(out, `200 {"status":"accepted"}`) {
		t.Fatalf("trigger:\n%s", out)
	}
	if strings.Contains(out, userID) || strings.Contains(out, "julian") {
		t.Errorf("trigger printed the user id or the username:\n%s", out)
	}
	mu.Lock()
	if len(bodies) != 1 {
		mu.Unlock()
		t.Fatalf("%d bodies posted, want 1", len(bodies))
	}
	body := bodies[0]
	mu.Unlock()
	var p struct {
		Entry []struct {
			Changes []struct {
				Value struct {
					Contacts []map[string]any `json:"contacts"`
					Messages []map[string]any `json:"messages"`
				} `json:"value"`
			} `json:"changes"`
		} `json:"entry"`
	}
	if err := json.Unmarshal(body, &p); err != nil || len(p.Entry) != 1 || len(p.Entry[0].Changes) != 1 {
		t.Fatalf("the posted body: %v\n%s", err, body)
	}
	v := p.Entry[0].Changes[0].Value
	if len(v.Messages) != 1 || len(v.Contacts) != 1 {
		t.Fatalf("the posted body has %d messages and %d contacts, want one each:\n%s", len(v.Messages), len(v.Contacts), body)
	}
	m, c := v.Messages[0], v.Contacts[0]
	if _, hasFrom := m["from"]; hasFrom || m["from_user_id"] != userID || m["type"] != "text" {
		t.Errorf("the message: %v, want from_user_id %s and no from", m, userID)
	}
	profile, _ := c["profile"].(map[string]any)
	if _, hasWaID := c["wa_id"]; hasWaID || c["user_id"] != userID || profile["username"] != "julian" || profile["name"] != "Julian" {
		t.Errorf("contacts[0]: %v, want user_id %s, profile.username julian, profile.name Julian and no wa_id", c, userID)
	}

	// With the phone as well (no --no-phone): both, as Meta sends them once the phone is shared.
	mustCLI(t, "trigger", "--url", hook.URL, "--secret", "s", "--user-id", userID, "--from", "447700900123", "--text", "hi")
	mu.Lock()
	both := bodies[1]
	mu.Unlock()
	if s := string(both); !strings.Contains(s, `"from":"447700900123"`) || !strings.Contains(s, `"from_user_id":"`+userID+`"`) ||
		!strings.Contains(s, `"wa_id":"447700900123"`) || !strings.Contains(s, `"user_id":"`+userID+`"`) {
		t.Errorf("a message with phone and user id: %s", both)
	}

	for _, args := range [][]string{
		{"--no-phone", "--text", "hello"},
		{"--no-phone", "--username", "julian", "--text", "hello"},
		{"--user-id", "julian", "--no-phone"},
	} {
		_, _, err := cli(t, append([]string{"trigger", "--url", hook.URL, "--secret", "s"}, args...)...)
		if exitCode(err) != 2 {
			t.Errorf("trigger %v: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Errorf("%d bodies posted, want 2: a refused trigger posts nothing", len(bodies))
	}
}
