package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

func intents() []llm.Intent {
	return []llm.Intent{
		{Name: "create_booking", Description: "a new booking",
			Fields: []llm.Field{{Name: "client", Type: llm.TypeString}, {Name: "date", Type: llm.TypeDate},
				{Name: "route", Type: llm.TypeString}, {Name: "bus", Type: llm.TypeString}, {Name: "price", Type: llm.TypeInteger}},
			Required: []string{"client", "date", "bus"}},
		{Name: "check_schedule", Description: "who drives which bus when", Fields: []llm.Field{{Name: "date", Type: llm.TypeDate}}},
	}
}

func request(text string) llm.Request {
	return llm.Request{
		Model:        "gemini-2.5-flash",
		Instructions: "You are the operations assistant of a tour-bus company.",
		Role:         "owner",
		Language:     "id",
		Intents:      intents(),
		History:      []llm.Turn{{Role: llm.RoleUser, Text: "halo"}, {Role: llm.RoleModel, Text: "Halo!"}},
		Text:         text,
		Now:          time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
	}
}

func newClient(t *testing.T, url string) *llm.Client {
	t.Helper()
	c, err := llm.New(context.Background(), llm.Config{Project: "wapipe-dev", BaseURL: url})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

func TestExtract(t *testing.T) {
	t.Parallel()
	fake := geminifake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	if err := fake.AddRule(geminifake.Rule{Contains: "BOOK", Response: &geminifake.Answer{
		Intent: "create_booking", Confidence: 0.95, Reply: "Benar?",
		Data: map[string]any{"client": "Pak Agus", "date": "2027-03-01", "bus": "01", "price": 15000000, "driver": "x"},
	}}); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL)

	got, err := c.Extract(context.Background(), request("book bus 01 for Pak Agus on 1 March, 15 million"))
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if got.Usage.PromptTokens <= 0 || got.Usage.OutputTokens <= 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.OutputTokens {
		t.Errorf("usage = %+v; want the fake's counts", got.Usage)
	}
	got.Usage = llm.Usage{}
	want := llm.Result{Intent: "create_booking", Confidence: 0.95, Reply: "Benar?", ModelVersion: "gemini-2.5-flash",
		Data: map[string]any{"client": "Pak Agus", "date": "2027-03-01", "bus": "01", "price": int64(15000000)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result (-want, +got):\n%s", diff)
	}

	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake saw %d requests; want 1", len(reqs))
	}
	r := reqs[0]
	if r.APIVersion != "v1" || r.Project != "wapipe-dev" || r.Location != llm.DefaultLocation || r.Model != "gemini-2.5-flash" {
		t.Errorf("request went to %s", r.Path)
	}
	wantContents := []geminifake.Content{{Role: "user", Text: "halo"}, {Role: "model", Text: "Halo!"},
		{Role: "user", Text: "book bus 01 for Pak Agus on 1 March, 15 million"}}
	if diff := cmp.Diff(wantContents, r.Contents); diff != "" {
		t.Errorf("contents (-want, +got):\n%s", diff)
	}
	if !r.HasResponseSchema || r.ResponseMIMEType != "application/json" {
		t.Errorf("request has schema %v and MIME type %q; want a JSON schema", r.HasResponseSchema, r.ResponseMIMEType)
	}
	if temp, _ := r.GenerationConfig["temperature"].(float64); temp <= 0 || temp > 0.3 {
		t.Errorf("temperature = %v; want low", r.GenerationConfig["temperature"])
	}
	if !strings.HasPrefix(r.SystemInstruction, "You are the operations assistant") || !strings.Contains(r.SystemInstruction, "create_booking") {
		t.Errorf("system instruction = %q", r.SystemInstruction)
	}
}

// TestNewWithBaseURLSendsNoCredentials checks that the dev set-up needs no Google account:
// no credential lookup (a broken GOOGLE_APPLICATION_CREDENTIALS is never read) and no
// Authorization header.
func TestNewWithBaseURLSendsNoCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/credentials.json")
	fake := geminifake.New()
	var authorized atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Goog-Api-Key") != "" {
			authorized.Store(true)
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	c, err := llm.New(context.Background(), llm.Config{Project: "p", Location: "europe-west1", BaseURL: srv.URL + "/", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	got, err := c.Extract(context.Background(), request("hello"))
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if got.Intent != llm.GeneralQuery || got.Reply == "" {
		t.Errorf("result = %+v; want the default general_query", got)
	}
	if authorized.Load() {
		t.Error("the request carried credentials")
	}
	if r := fake.Requests(); len(r) != 1 || r[0].Location != "europe-west1" {
		t.Errorf("requests = %+v; want one to europe-west1", r)
	}
}

func TestNewRequiresProject(t *testing.T) {
	t.Parallel()
	if _, err := llm.New(context.Background(), llm.Config{BaseURL: "http://127.0.0.1:1"}); err == nil {
		t.Error("New without a project succeeded")
	}
}

func TestExtractInvalidResponseKeepsUsage(t *testing.T) {
	t.Parallel()
	fake := geminifake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	if err := fake.AddRule(geminifake.Rule{RawText: "Sure, booked!"}); err != nil {
		t.Fatal(err)
	}
	got, err := newClient(t, srv.URL).Extract(context.Background(), request("book bus 01"))
	if !errors.Is(err, llm.ErrInvalidResponse) {
		t.Fatalf("Extract: %v; want ErrInvalidResponse", err)
	}
	if got.Usage.TotalTokens == 0 || got.ModelVersion == "" || got.Intent != "" {
		t.Errorf("result = %+v; want only usage and model version", got)
	}
}

func TestExtractRejectsInvalidRequestWithoutCalling(t *testing.T) {
	t.Parallel()
	fake := geminifake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	req := request("hi")
	req.Intents[0].Required = []string{"driver"}
	if _, err := newClient(t, srv.URL).Extract(context.Background(), req); !errors.Is(err, llm.ErrPermanent) {
		t.Errorf("Extract: %v; want ErrPermanent", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("fake saw %d requests; want none", n)
	}
}
