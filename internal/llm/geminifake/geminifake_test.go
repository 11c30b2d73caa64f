package geminifake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

var now = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func start(t *testing.T, opts ...geminifake.Option) (*geminifake.Server, *httptest.Server) {
	t.Helper()
	f := geminifake.New(append([]geminifake.Option{geminifake.WithClock(func() time.Time { return now })}, opts...)...)
	srv := f.NewTestServer()
	t.Cleanup(srv.Close)
	return f, srv
}

// genaiClient is the official client as the worker builds it in dev: Vertex backend, the
// fake as BaseURL, API v1, no credentials.
func genaiClient(t *testing.T, srv *httptest.Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "p", Location: "us-central1", HTTPClient: srv.Client(),
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, APIVersion: "v1"},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

func llmClient(t *testing.T, srv *httptest.Server, timeout time.Duration) *llm.Client {
	t.Helper()
	c, err := llm.New(context.Background(), llm.Config{Project: "p", BaseURL: srv.URL, Timeout: timeout})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

func tourBus() []llm.Intent {
	return []llm.Intent{
		{Name: "create_booking", Description: "a new booking",
			Fields: []llm.Field{{Name: "client", Type: llm.TypeString}, {Name: "date", Type: llm.TypeDate},
				{Name: "route", Type: llm.TypeString}, {Name: "bus", Type: llm.TypeString}, {Name: "price", Type: llm.TypeInteger}},
			Required: []string{"client", "date", "bus"}},
		{Name: "check_schedule", Description: "who drives which bus when", Fields: []llm.Field{{Name: "date", Type: llm.TypeDate}}},
		{Name: "report_issue", Description: "a problem with a bus", Fields: []llm.Field{{Name: "bus", Type: llm.TypeString}, {Name: "issue", Type: llm.TypeString}}},
	}
}

func request(text string) llm.Request {
	return llm.Request{Model: "gemini-2.5-flash", Instructions: "You are the operations assistant.", Role: "owner",
		Language: "id", Intents: tourBus(), Text: text, Now: now}
}

func TestGenaiClientParsesTheAnswer(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	answer := geminifake.Answer{Intent: "check_schedule", Confidence: 0.9, Data: map[string]any{"date": "2026-11-24"}, Reply: "Besok: bus 01."}
	if err := f.AddRule(geminifake.Rule{Name: "sched", Contains: "jadwal", Response: &answer}); err != nil {
		t.Fatal(err)
	}
	c := genaiClient(t, srv)
	resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash",
		[]*genai.Content{genai.NewContentFromText("Jadwal besok?", genai.RoleUser)},
		&genai.GenerateContentConfig{ResponseMIMEType: "application/json"})
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if len(resp.Candidates) != 1 {
		t.Fatalf("got %d candidates; want 1", len(resp.Candidates))
	}
	cand := resp.Candidates[0]
	if cand.FinishReason != genai.FinishReasonStop || cand.Content.Role != genai.RoleModel {
		t.Errorf("candidate finish %q role %q; want STOP and model", cand.FinishReason, cand.Content.Role)
	}
	var got geminifake.Answer
	if err := json.Unmarshal([]byte(cand.Content.Parts[0].Text), &got); err != nil {
		t.Fatalf("answer text is not JSON: %v", err)
	}
	if diff := cmp.Diff(answer, got); diff != "" {
		t.Errorf("answer (-want, +got):\n%s", diff)
	}
	u := resp.UsageMetadata
	if u == nil || u.PromptTokenCount <= 0 || u.CandidatesTokenCount <= 0 || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
		t.Errorf("usage = %+v", u)
	}
	if resp.ModelVersion != "gemini-2.5-flash" || resp.ResponseID == "" || !resp.CreateTime.Equal(now) {
		t.Errorf("model version %q, response id %q, create time %s", resp.ModelVersion, resp.ResponseID, resp.CreateTime)
	}
	if rs := f.Requests(); len(rs) != 1 || rs[0].Rule != "sched" || rs[0].Status != http.StatusOK {
		t.Errorf("requests = %+v; want one answered by rule sched", rs)
	}
}

func TestRecordsTheRequest(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	req := request("jadwal besok")
	req.History = []llm.Turn{{Role: llm.RoleUser, Text: "halo"}, {Role: llm.RoleModel, Text: "Halo!"}}
	res, err := llmClient(t, srv, 0).Extract(context.Background(), req)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	rs := f.Requests()
	if len(rs) != 1 {
		t.Fatalf("got %d requests; want 1", len(rs))
	}
	// The record carries the usageMetadata the client read.
	if res.Usage.PromptTokens <= 0 || res.Usage.OutputTokens <= 0 {
		t.Errorf("usage read by the client = %+v, want tokens", res.Usage)
	}
	r := rs[0]
	want := geminifake.Request{
		Time: now, Method: "POST", Path: "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
		APIVersion: "v1", Project: "p", Location: "us-central1", Model: "gemini-2.5-flash",
		Contents:          []geminifake.Content{{Role: "user", Text: "halo"}, {Role: "model", Text: "Halo!"}, {Role: "user", Text: "jadwal besok"}},
		Text:              "jadwal besok",
		HasResponseSchema: true, ResponseMIMEType: "application/json", Rule: "default", Status: 200,
		PromptTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.OutputTokens,
	}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		switch p.String() {
		case "SystemInstruction", "GenerationConfig", "ResponseSchema":
			return true
		}
		return false
	}, cmp.Ignore())
	if diff := cmp.Diff(want, r, ignore); diff != "" {
		t.Errorf("request (-want, +got):\n%s", diff)
	}
	if !strings.HasPrefix(r.SystemInstruction, "You are the operations assistant.") {
		t.Errorf("system instruction = %q", r.SystemInstruction)
	}
	props, _ := r.ResponseSchema["properties"].(map[string]any)
	intent, _ := props["intent"].(map[string]any)
	if diff := cmp.Diff([]any{"create_booking", "check_schedule", "report_issue", "general_query"}, intent["enum"]); diff != "" {
		t.Errorf("schema intent enum (-want, +got):\n%s", diff)
	}
	if _, ok := r.GenerationConfig["temperature"]; !ok {
		t.Errorf("generation config %v lacks the temperature", r.GenerationConfig)
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	base := geminifake.Rule{Name: "base", Contains: "hello", Response: &geminifake.Answer{Intent: "general_query", Confidence: 1, Reply: "base"}}
	f, srv := start(t, geminifake.WithRules(base))
	add := func(r geminifake.Rule) {
		t.Helper()
		if err := f.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(s string) *geminifake.Answer {
		return &geminifake.Answer{Intent: "general_query", Confidence: 1, Reply: s}
	}
	add(geminifake.Rule{Name: "contains", Contains: "HeLLo WORLD", Response: reply("contains")})
	add(geminifake.Rule{Name: "regexp", Regexp: `^bus \d+$`, Response: reply("regexp")})
	add(geminifake.Rule{Name: "both", Contains: "jadwal", Regexp: `\d`, Response: reply("both")})
	add(geminifake.Rule{Name: "later", Contains: "hello world", Response: reply("later")})

	c := llmClient(t, srv, 0)
	tests := []struct{ text, want string }{
		{"say hello world!", "contains"}, // case-insensitive; first added rule wins
		{"hello there", "base"},          // added rules did not match: the base rule
		{"bus 12", "regexp"},
		{"the bus 12", "Hello! How can I help you?"}, // anchored regexp does not match: default
		{"jadwal 3", "both"},
		{"jadwal", "Hello! How can I help you?"}, // both conditions must hold
	}
	for _, tt := range tests {
		got, err := c.Extract(context.Background(), request(tt.text))
		if err != nil {
			t.Fatalf("Extract(%q): %v", tt.text, err)
		}
		if got.Reply != tt.want {
			t.Errorf("Extract(%q).Reply = %q; want %q", tt.text, got.Reply, tt.want)
		}
	}

	if err := f.AddRule(geminifake.Rule{Regexp: "("}); err == nil {
		t.Error("AddRule accepted an invalid regexp")
	}
	if err := f.AddRule(geminifake.Rule{Contains: "x"}); err == nil {
		t.Error("AddRule accepted a rule without an answer")
	}

	f.Reset()
	if rs := f.Requests(); len(rs) != 0 {
		t.Errorf("Reset kept %d requests", len(rs))
	}
	got, err := c.Extract(context.Background(), request("hello world"))
	if err != nil || got.Reply != "base" {
		t.Errorf("after Reset: %q, %v; want the base rule only", got.Reply, err)
	}
}

func TestRulesMatchTheLastUserMessage(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	if err := f.AddRule(geminifake.Rule{Contains: "book", Response: &geminifake.Answer{Intent: "general_query", Confidence: 1, Reply: "book"}}); err != nil {
		t.Fatal(err)
	}
	req := request("thanks")
	req.History = []llm.Turn{{Role: llm.RoleUser, Text: "book bus 01"}, {Role: llm.RoleModel, Text: "book what?"}}
	got, err := llmClient(t, srv, 0).Extract(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reply == "book" {
		t.Error("a rule matched an earlier message")
	}
}

func TestDefaultRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want geminifake.Answer
	}{
		{"book bus 01 for Pak Agus on 1 March, 15 million", geminifake.Answer{
			Intent: "create_booking", Confidence: 0.95,
			Data:  map[string]any{"bus": "01", "client": "Pak Agus", "date": "2027-03-01", "price": 15000000.0},
			Reply: "I'll record: booking bus 01 for Pak Agus on 1 March, 15,000,000. Correct?"}},
		{"Tolong pesan bus 07 untuk Bu Sari tanggal 5 Desember dari Jakarta ke Bandung, Rp 12.500.000", geminifake.Answer{
			Intent: "create_booking", Confidence: 0.95,
			Data:  map[string]any{"bus": "07", "client": "Bu Sari", "date": "2026-12-05", "route": "Jakarta - Bandung", "price": 12500000.0},
			Reply: "I'll record: booking bus 07 for Bu Sari on 5 December, Jakarta - Bandung, 12,500,000. Correct?"}},
		{"booking for Pak Budi on 2027-01-10", geminifake.Answer{
			Intent: "create_booking", Confidence: 0.85, Data: map[string]any{"client": "Pak Budi", "date": "2027-01-10"},
			MissingFields: []string{"bus"}, Reply: "To record the booking I still need: bus."}},
		{"What's the schedule tomorrow?", geminifake.Answer{
			Intent: "check_schedule", Confidence: 0.9, Data: map[string]any{"date": "2026-11-24"},
			Reply: "Let me check the schedule for 24 November."}},
		{"jadwal", geminifake.Answer{Intent: "check_schedule", Confidence: 0.9, Reply: "Let me check the schedule."}},
		{"AC mati di bus 03", geminifake.Answer{
			Intent: "report_issue", Confidence: 0.9, Data: map[string]any{"bus": "03", "issue": "AC mati di bus 03"},
			Reply: "Noted, I'll report the problem on bus 03."}},
		{"good morning", geminifake.Answer{Intent: "general_query", Confidence: 0.9, Reply: "Hello! How can I help you?"}},
	}
	_, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	c := genaiClient(t, srv)
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			resp, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text(tt.text), nil)
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			var got geminifake.Answer
			if err := json.Unmarshal([]byte(resp.Candidates[0].Content.Parts[0].Text), &got); err != nil {
				t.Fatalf("answer is not JSON: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answer (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultRulesThroughTheClient runs the devstack's answers through llm.Extract: their
// values pass the client's validation, and an intent the tenant does not offer becomes
// general_query.
func TestDefaultRulesThroughTheClient(t *testing.T) {
	t.Parallel()
	_, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	c := llmClient(t, srv, 0)
	got, err := c.Extract(context.Background(), request("book bus 01 for Pak Agus on 1 March, 15 million"))
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	want := map[string]any{"bus": "01", "client": "Pak Agus", "date": "2027-03-01", "price": int64(15000000)}
	if diff := cmp.Diff(want, got.Data); diff != "" || got.Intent != "create_booking" || got.Confidence != 0.95 || len(got.MissingFields) != 0 {
		t.Errorf("result = %+v; data (-want, +got):\n%s", got, diff)
	}

	req := request("AC mati di bus 03")
	req.Intents = req.Intents[:2] // a tenant without report_issue
	got, err = c.Extract(context.Background(), req)
	if err != nil || got.Intent != llm.GeneralQuery {
		t.Errorf("Extract = %+v, %v; want general_query for an intent not offered", got, err)
	}
}

// TestFailuresSurfaceAsErrorKinds checks the fake's failures against llm's error kinds.
func TestFailuresSurfaceAsErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failure    *geminifake.Failure
		rule       *geminifake.Rule
		models     []string
		timeout    time.Duration
		kind       error
		status     int
		retryAfter time.Duration
	}{
		{name: "500", failure: &geminifake.Failure{Status: 500}, kind: llm.ErrUnavailable, status: 500},
		{name: "503", failure: &geminifake.Failure{Status: 503}, kind: llm.ErrUnavailable, status: 503},
		{name: "429 with Retry-After", failure: &geminifake.Failure{Status: 429, RetryAfter: "7"}, kind: llm.ErrUnavailable, status: 429, retryAfter: 7 * time.Second},
		{name: "400", failure: &geminifake.Failure{Status: 400}, kind: llm.ErrPermanent, status: 400},
		{name: "unknown model", models: []string{"gemini-2.5-pro"}, kind: llm.ErrPermanent, status: 404},
		{name: "invalid JSON", rule: &geminifake.Rule{RawText: `{"intent": "create_booking", "confid`}, kind: llm.ErrInvalidResponse},
		{name: "intent not offered", rule: &geminifake.Rule{Response: &geminifake.Answer{Intent: "fly", Confidence: 1, Reply: "ok"}}, kind: llm.ErrInvalidResponse},
		{name: "truncated by MAX_TOKENS", rule: &geminifake.Rule{RawText: `{"intent":"general_query","confidence":1,"reply":"ok"}`, FinishReason: "MAX_TOKENS"}, kind: llm.ErrInvalidResponse},
		{name: "timeout", failure: &geminifake.Failure{Delay: time.Minute}, timeout: 200 * time.Millisecond, kind: llm.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []geminifake.Option
			if tt.models != nil {
				opts = append(opts, geminifake.WithModels(tt.models...))
			}
			f, srv := start(t, opts...)
			if tt.failure != nil {
				f.FailNext(1, *tt.failure)
			}
			if tt.rule != nil {
				if err := f.AddRule(*tt.rule); err != nil {
					t.Fatal(err)
				}
			}
			_, err := llmClient(t, srv, tt.timeout).Extract(context.Background(), request("hello"))
			if !errors.Is(err, tt.kind) {
				t.Fatalf("Extract: %v; want %v", err, tt.kind)
			}
			var e *llm.Error
			if !errors.As(err, &e) || e.HTTPStatus != tt.status || e.RetryAfter != tt.retryAfter {
				t.Errorf("error %+v; want HTTP %d, retry after %s", e, tt.status, tt.retryAfter)
			}
			if tt.name == "timeout" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("timeout error %v does not wrap context.DeadlineExceeded", err)
			}
		})
	}
}

func TestFailuresAreConsumedInOrder(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	f.FailNext(2, geminifake.Failure{Status: 503})
	f.FailNext(1, geminifake.Failure{Status: 400})
	c := llmClient(t, srv, 0)
	for i, want := range []error{llm.ErrUnavailable, llm.ErrUnavailable, llm.ErrPermanent, nil} {
		_, err := c.Extract(context.Background(), request("hello"))
		if !errors.Is(err, want) {
			t.Errorf("call %d: %v; want %v", i+1, err, want)
		}
	}
	var statuses []int
	for _, r := range f.Requests() {
		statuses = append(statuses, r.Status)
	}
	if diff := cmp.Diff([]int{503, 503, 400, 200}, statuses); diff != "" {
		t.Errorf("statuses (-want, +got):\n%s", diff)
	}
}

func TestDelayWithoutStatusAnswersLate(t *testing.T) {
	t.Parallel()
	f, srv := start(t)
	f.FailNext(1, geminifake.Failure{Delay: 50 * time.Millisecond})
	got, err := llmClient(t, srv, 0).Extract(context.Background(), request("hello"))
	if err != nil || got.Intent != llm.GeneralQuery {
		t.Errorf("Extract = %+v, %v; want the normal answer", got, err)
	}
}

func TestRejectsMalformedCalls(t *testing.T) {
	t.Parallel()
	_, srv := start(t)
	const path = "/v1/projects/p/locations/l/publishers/google/models/m:generateContent"
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown path", "POST", "/v1/models/m:generateContent", `{}`, 404},
		{"GET", "GET", path, ``, 404},
		{"not JSON", "POST", path, `{`, 400},
		{"no contents", "POST", path, `{"contents":[]}`, 400},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || body.Error.Code != tt.want || body.Error.Status == "" {
			t.Errorf("%s: HTTP %d %+v; want %d with a Google error body", tt.name, resp.StatusCode, body, tt.want)
		}
	}
}

func adminDo(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: body %q is not JSON", method, url, b)
	}
	return resp.StatusCode, out
}

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	f, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	c := llmClient(t, srv, 0)

	status, _ := adminDo(t, "POST", srv.URL+"/_fake/rules",
		`{"rules":[{"name":"scripted","contains":"BOOK","response":{"intent":"create_booking","confidence":0.5,"data":{"bus":"09"},"reply":"Which date?"}}]}`)
	if status != 200 {
		t.Fatalf("POST /_fake/rules: %d", status)
	}
	got, err := c.Extract(context.Background(), request("book bus 01 for Pak Agus on 1 March"))
	if err != nil || got.Reply != "Which date?" || got.Data["bus"] != "09" {
		t.Errorf("Extract = %+v, %v; want the scripted rule ahead of the defaults", got, err)
	}

	_, rules := adminDo(t, "GET", srv.URL+"/_fake/rules", "")
	var names []string
	for _, r := range rules["rules"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff([]string{"scripted", "create_booking", "check_schedule", "report_issue"}, names); diff != "" {
		t.Errorf("GET /_fake/rules names (-want, +got):\n%s", diff)
	}

	if status, _ := adminDo(t, "POST", srv.URL+"/_fake/fail", `{"n":1,"status":429,"retry_after":"3"}`); status != 200 {
		t.Fatalf("POST /_fake/fail: %d", status)
	}
	_, err = c.Extract(context.Background(), request("hello"))
	if d, ok := llm.RetryAfter(err); !errors.Is(err, llm.ErrUnavailable) || !ok || d != 3*time.Second {
		t.Errorf("Extract after fail: %v; want ErrUnavailable with retry after 3s", err)
	}

	if status, _ := adminDo(t, "POST", srv.URL+"/_fake/fail", `{"n":1,"delay":"5s"}`); status != 200 {
		t.Fatalf("POST /_fake/fail with delay: %d", status)
	}
	_, err = llmClient(t, srv, 100*time.Millisecond).Extract(context.Background(), request("hello"))
	if !errors.Is(err, llm.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Extract after a delay: %v; want a timeout", err)
	}

	// The timed-out call is recorded once the fake notices the client left.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.WaitForRequests(ctx, 3); err != nil {
		t.Fatal(err)
	}
	_, reqs := adminDo(t, "GET", srv.URL+"/_fake/requests", "")
	list := reqs["requests"].([]any)
	if len(list) != 3 {
		t.Fatalf("GET /_fake/requests: %d requests; want 3", len(list))
	}
	first := list[0].(map[string]any)
	if first["model"] != "gemini-2.5-flash" || first["has_response_schema"] != true || first["rule"] != "scripted" ||
		first["text"] != "book bus 01 for Pak Agus on 1 March" || !strings.Contains(first["system_instruction"].(string), "create_booking") {
		t.Errorf("first request = %v", first)
	}
	if st := list[2].(map[string]any)["status"]; st != 0.0 {
		t.Errorf("timed-out request status = %v; want 0 (no answer)", st)
	}

	if status, _ := adminDo(t, "POST", srv.URL+"/_fake/reset", ""); status != 200 {
		t.Fatalf("POST /_fake/reset: %d", status)
	}
	if _, reqs := adminDo(t, "GET", srv.URL+"/_fake/requests", ""); len(reqs["requests"].([]any)) != 0 {
		t.Errorf("requests after reset: %v", reqs)
	}
	got, err = c.Extract(context.Background(), request("book bus 01 for Pak Agus on 1 March"))
	if err != nil || got.Data["bus"] != "01" {
		t.Errorf("after reset: %+v, %v; want the default booking rule", got, err)
	}

	for _, bad := range []struct{ method, path, body string }{
		{"POST", "/_fake/rules", `{"rules":[]}`},
		{"POST", "/_fake/rules", `{"rules":[{"regexp":"(","raw_text":"x"}]}`},
		{"POST", "/_fake/rules", `{"rules":[{"contains":"x"}]}`},
		{"POST", "/_fake/rules", `{"rules":[{"contain":"x","raw_text":"x"}]}`},
		{"POST", "/_fake/fail", `{"n":0,"status":500}`},
		{"POST", "/_fake/fail", `{"n":1}`},
		{"POST", "/_fake/fail", `{"n":1,"status":200}`},
		{"POST", "/_fake/fail", `{"n":1,"delay":"soon"}`},
	} {
		if status, _ := adminDo(t, bad.method, srv.URL+bad.path, bad.body); status != 400 {
			t.Errorf("%s %s %s: %d; want 400", bad.method, bad.path, bad.body, status)
		}
	}
	if status, _ := adminDo(t, "GET", srv.URL+"/_fake/nothing", ""); status != 404 {
		t.Errorf("unknown control: %d; want 404", status)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	f, srv := start(t, geminifake.WithRules(geminifake.DefaultRules()...))
	c := llmClient(t, srv, 0)
	const workers, calls = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				text := fmt.Sprintf("book bus %02d for Pak Agus on 1 March", w*calls+i)
				got, err := c.Extract(context.Background(), request(text))
				if err != nil {
					errs <- err
					continue
				}
				if want := fmt.Sprintf("%02d", w*calls+i); got.Data["bus"] != want {
					errs <- fmt.Errorf("bus %v; want %s", got.Data["bus"], want)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the controls, meanwhile
		defer wg.Done()
		for i := range calls {
			_ = f.AddRule(geminifake.Rule{Contains: fmt.Sprintf("never-%d", i), RawText: "x"})
			_ = f.Requests()
			_ = f.Rules()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.WaitForRequests(ctx, workers*calls); err != nil {
		t.Fatalf("WaitForRequests: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWaitForRequestsHonoursContext(t *testing.T) {
	t.Parallel()
	f := geminifake.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.WaitForRequests(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitForRequests: %v; want context.Canceled", err)
	}
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	f := geminifake.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.ListenAndServe(ctx, addr) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Post("http://"+addr+"/_fake/reset", "application/json", bytes.NewReader(nil))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake never answered on %s: %v", addr, err)
		}
		select {
		case err := <-done:
			t.Fatalf("ListenAndServe: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe after cancel: %v", err)
	}
	if err := geminifake.New().ListenAndServe(context.Background(), "256.0.0.1:0"); err == nil {
		t.Error("ListenAndServe on a bad address succeeded")
	}
}
