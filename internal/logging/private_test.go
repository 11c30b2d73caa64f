package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/logging/logcheck"
)

const (
	sampleUser     = "US.13491208655302741918"
	sampleParent   = "US.ENT.506847293015824"
	sampleUsername = "@julianzlc"
	samplePhone    = "16505551234"
	sampleWamid    = "wamid.HBgLMTY1MDU1NTEyMzQVAgASGBQzRUIwQzc2N0Q3MTk0NjE5RUY0QQA="
	keyA           = "key-a-0123456789abcdef0123456789abcdef"
	keyB           = "key-b-0123456789abcdef0123456789abcdef"
)

func hasher(t *testing.T, key string) *logging.Hasher {
	t.Helper()
	h, err := logging.NewHasher(key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHasherIsKeyed(t *testing.T) {
	t.Parallel()
	a, b := hasher(t, keyA), hasher(t, keyB)
	tests := []struct {
		name string
		f    func(*logging.Hasher, string) string
		in   string
	}{
		{"Phone", (*logging.Hasher).Phone, samplePhone},
		{"Ref", (*logging.Hasher).Ref, sampleWamid},
		{"User", (*logging.Hasher).User, sampleUser},
		{"Username", (*logging.Hasher).Username, sampleUsername},
	}
	for _, tc := range tests {
		ra, rb := tc.f(a, tc.in), tc.f(b, tc.in)
		if ra == rb {
			t.Errorf("%s: keys A and B give the same ref %s", tc.name, ra)
		}
		if ra != tc.f(hasher(t, keyA), tc.in) {
			t.Errorf("%s: not stable for one key", tc.name)
		}
		if tc.f(a, tc.in+"0") == ra {
			t.Errorf("%s: two values give one ref", tc.name)
		}
		if strings.Contains(ra, "5551234") || strings.Contains(ra, "wamid") || strings.Contains(ra, "349120865") || strings.Contains(ra, "julian") {
			t.Errorf("%s(%s) = %s holds the value", tc.name, tc.in, ra)
		}
		for _, unkeyed := range logcheck.UnkeyedHashes(tc.in) {
			if strings.Contains(ra, unkeyed) {
				t.Errorf("%s(%s) = %s is the unkeyed hash", tc.name, tc.in, ra)
			}
		}
		if tc.f(a, "") != "" {
			t.Errorf("%s(\"\") is not empty", tc.name)
		}
	}
	if got := a.Phone(samplePhone); !strings.HasPrefix(got, "ph_") || len(got) != len("ph_")+12 {
		t.Errorf("Phone = %s, want ph_ and 12 hex digits", got)
	}
	if got := a.Ref(sampleWamid); !logging.IsRef(got) {
		t.Errorf("Ref = %s, want ref_ and 16 hex digits", got)
	}
	if a.Phone("+1 650-555-1234") != a.Phone(samplePhone) {
		t.Error("Phone depends on the number's punctuation")
	}
	if a.Phone(samplePhone) == "ph_"+strings.TrimPrefix(a.Ref(samplePhone), "ref_")[:12] {
		t.Error("a phone's ref equals an id's ref: the domains are not separated")
	}
}

func TestHasherKeyRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, env string
		wantErr  bool
	}{
		{"", "dev", false},
		{"", "prod", true},
		{"", "staging", true},
		{"short", "dev", true},
		{"short", "prod", true},
		{keyA, "prod", false},
	}
	for _, tc := range tests {
		h, err := logging.HasherFromEnv(tc.key, tc.env)
		if (err != nil) != tc.wantErr {
			t.Errorf("HasherFromEnv(%q, %s) error = %v, want error %v", tc.key, tc.env, err, tc.wantErr)
		}
		if err != nil && tc.key != "" && strings.Contains(err.Error(), tc.key) {
			t.Errorf("the error shows the key: %v", err)
		}
		if err == nil && tc.key == "" && h.Ref("x") != logging.DevHasher().Ref("x") {
			t.Error("dev without a key does not use the dev default")
		}
	}
}

func logLine(t *testing.T, h *logging.Hasher, log func(*slog.Logger)) (string, map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	log(logging.New(&buf, logging.Options{Hasher: h}))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON object: %q", buf.String())
	}
	return buf.String(), got
}

func TestHandlerRendersRefs(t *testing.T) {
	t.Parallel()
	h := hasher(t, keyA)
	raw, got := logLine(t, h, func(l *slog.Logger) {
		ctx, l := logging.With(logging.WithLogger(context.Background(), l), logging.EventID(sampleWamid))
		l.InfoContext(ctx, "m", logging.MessageID(sampleWamid+"2"), logging.Phone("to", samplePhone),
			logging.User("user", sampleUser), logging.User("parent", sampleParent), logging.Username("username", sampleUsername))
	})
	want := map[string]any{
		"severity": "INFO", "message": "m",
		"event_ref": h.Ref(sampleWamid), "message_ref": h.Ref(sampleWamid + "2"), "to": h.Phone(samplePhone),
		"user": h.User(sampleUser), "parent": h.User(sampleParent), "username": h.Username(sampleUsername),
	}
	delete(got, "time")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log line (-want, +got):\n%s", diff)
	}
	if h.Username("JulianZLC") != h.Username(sampleUsername) {
		t.Error("a username's ref depends on its case or its @")
	}
	logcheck.Check(t, raw, []string{samplePhone}, []string{sampleWamid, sampleUser, sampleParent, sampleUsername})
}

func TestHandlerScrubsWamids(t *testing.T) {
	t.Parallel()
	h := hasher(t, keyA)
	statusEvent := sampleWamid + ":delivered"
	raw, got := logLine(t, h, func(l *slog.Logger) {
		l.Warn("failed for "+sampleWamid, "inbound_event_id", statusEvent,
			"error", fmt.Errorf("read inbound_events/%s: %w", sampleWamid, errors.New("boom")),
			slog.Group("g", "id", sampleWamid))
	})
	if got["inbound_event_id"] != h.Ref(statusEvent) {
		t.Errorf("a wamid value renders as %v, want its ref %s", got["inbound_event_id"], h.Ref(statusEvent))
	}
	if want := "read inbound_events/" + h.Ref(sampleWamid) + ": boom"; got["error"] != want {
		t.Errorf("error = %v, want %s", got["error"], want)
	}
	if want := "failed for " + h.Ref(sampleWamid); got["message"] != want {
		t.Errorf("message = %v, want %s", got["message"], want)
	}
	if g, _ := got["g"].(map[string]any); g["id"] != h.Ref(sampleWamid) {
		t.Errorf("group = %v", got["g"])
	}
	logcheck.Check(t, raw, nil, []string{sampleWamid})
}

func TestPrivateValuesSafeWithoutHasher(t *testing.T) {
	t.Parallel()
	// wapipe's logger without a key, a plain slog handler and fmt never show the value.
	raw, got := logLine(t, nil, func(l *slog.Logger) {
		l.Info("m", logging.EventID(sampleWamid), logging.Phone("to", samplePhone), "id", sampleWamid)
	})
	if got["event_ref"] != logging.Redacted || got["to"] != logging.Redacted || got["id"] != logging.Redacted {
		t.Errorf("without a Hasher: %s", raw)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("m", logging.EventID(sampleWamid), logging.Phone("to", samplePhone))
	slog.New(slog.NewTextHandler(&buf, nil)).Info("m", logging.MessageID(sampleWamid))
	fmt.Fprintln(&buf, logging.Phone("to", samplePhone).Value.Any(), logging.EventID(sampleWamid).Value)
	logcheck.Check(t, buf.String(), []string{samplePhone}, []string{sampleWamid})
	if !strings.Contains(buf.String(), logging.Redacted) {
		t.Errorf("other handlers: %s", buf.String())
	}
}

func TestLogcheckFindsLeaks(t *testing.T) {
	t.Parallel()
	leaks := []string{
		`{"to":"16505551234"}`,
		`{"to":"+1 650 555 1234"}`,
		`{"id":"wamid.x"}`,
		`{"to":"` + logcheck.UnkeyedHashes(samplePhone)[0] + `"}`,
		`{"user":"` + sampleUser + `"}`,
		`{"error":"contact ` + sampleParent + ` not found"}`,
		`{"user":"CO.1047385771169864"}`,
		`{"username":"julianzlc"}`,
	}
	for _, line := range leaks {
		ft := &fakeT{}
		logcheck.Check(ft, line, []string{"+1 650 555 1234"}, []string{sampleUsername})
		if ft.errors == 0 {
			t.Errorf("Check missed the leak in %s", line)
		}
	}
	ft := &fakeT{}
	if n := logcheck.Check(ft, `{"to":"`+hasher(t, keyA).Phone(samplePhone)+`"}`+"\n", []string{samplePhone}, nil); n != 1 || ft.errors != 0 {
		t.Errorf("Check on a clean line: %d lines, %d errors", n, ft.errors)
	}
}

type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.errors++ }
