package graph

import (
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
)

const (
	testToken = "EAAtesttoken123"
	testPNID  = "106540352242922"
	testTo    = "16505551234"
)

// recorded is what the fake endpoint saw.
type recorded struct {
	Method, Path, Auth, ContentType string
	Body                            map[string]any
}

// endpoint answers every request with status and body and records it.
func endpoint(t *testing.T, status int, body string, headers map[string]string) (*httptest.Server, func() recorded) {
	t.Helper()
	var mu sync.Mutex
	var got recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = recorded{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
		_ = json.Unmarshal(b, &got.Body)
		mu.Unlock()
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() recorded { mu.Lock(); defer mu.Unlock(); return got }
}

func newTestClient(t *testing.T, base string) *Client {
	t.Helper()
	c, err := NewClient(base+"/v24.0/", testToken, nil)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

const sendOK = `{"messaging_product":"whatsapp","contacts":[{"input":"16505551234","wa_id":"16505551234"}],"messages":[{"id":"wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"}]}`

func TestSendRequestShapes(t *testing.T) {
	t.Parallel()
	opts := SendOptions{ReplyTo: "wamid.IN", BizOpaqueCallbackData: "idem-1"}
	cases := []struct {
		name string
		send func(*Client) (SendResult, error)
		want string // the JSON body Meta documents for this kind
	}{
		{
			name: "text",
			send: func(c *Client) (SendResult, error) {
				return c.SendText(context.Background(), testPNID, testTo, Text{Body: "hello", PreviewURL: true}, opts)
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"text","context":{"message_id":"wamid.IN"},
				"text":{"body":"hello","preview_url":true},"biz_opaque_callback_data":"idem-1"}`,
		},
		{
			name: "text without options",
			send: func(c *Client) (SendResult, error) {
				return c.SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"text","text":{"body":"hello"}}`,
		},
		{
			name: "reply buttons",
			send: func(c *Client) (SendResult, error) {
				return c.SendButtons(context.Background(), testPNID, testTo, Buttons{Header: "Order", Body: "Confirm?", Footer: "Reply below",
					Buttons: []Button{{ID: "yes", Title: "Yes"}, {ID: "no", Title: "No"}}}, opts)
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"interactive","context":{"message_id":"wamid.IN"},
				"interactive":{"type":"button","header":{"type":"text","text":"Order"},"body":{"text":"Confirm?"},"footer":{"text":"Reply below"},
				"action":{"buttons":[{"type":"reply","reply":{"id":"yes","title":"Yes"}},{"type":"reply","reply":{"id":"no","title":"No"}}]}},
				"biz_opaque_callback_data":"idem-1"}`,
		},
		{
			name: "list",
			send: func(c *Client) (SendResult, error) {
				return c.SendList(context.Background(), testPNID, testTo, List{Body: "Pick a slot", ButtonText: "Slots",
					Sections: []Section{{Title: "Morning", Rows: []Row{{ID: "9", Title: "9:00", Description: "Early"}, {ID: "10", Title: "10:00"}}}}}, opts)
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"interactive","context":{"message_id":"wamid.IN"},
				"interactive":{"type":"list","body":{"text":"Pick a slot"},"action":{"button":"Slots","sections":[{"title":"Morning",
				"rows":[{"id":"9","title":"9:00","description":"Early"},{"id":"10","title":"10:00"}]}]}},"biz_opaque_callback_data":"idem-1"}`,
		},
		{
			name: "template",
			send: func(c *Client) (SendResult, error) {
				return c.SendTemplate(context.Background(), testPNID, testTo, Template{Name: "order_update", Language: Language{Code: "en_US"},
					Components: []Component{
						{Type: "body", Parameters: []Parameter{{Type: "text", Text: "Sheena"}, {Type: "currency", Currency: &Currency{FallbackValue: "$10.50", Code: "USD", Amount1000: 10500}}}},
						{Type: "button", SubType: "quick_reply", Index: "0", Parameters: []Parameter{{Type: "payload", Payload: "TRACK"}}},
					}}, SendOptions{BizOpaqueCallbackData: "idem-1"})
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"template","template":{"name":"order_update","language":{"code":"en_US"},
				"components":[{"type":"body","parameters":[{"type":"text","text":"Sheena"},{"type":"currency","currency":{"fallback_value":"$10.50","code":"USD","amount_1000":10500}}]},
				{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"TRACK"}]}]},"biz_opaque_callback_data":"idem-1"}`,
		},
		{
			name: "generic send: image by id",
			send: func(c *Client) (SendResult, error) {
				return c.Send(context.Background(), testPNID, Message{To: testTo, Type: "image", Image: &Media{ID: "1003383421387256", Caption: "Receipt"}, BizOpaqueCallbackData: "idem-1"})
			},
			want: `{"messaging_product":"whatsapp","to":"16505551234","type":"image","image":{"id":"1003383421387256","caption":"Receipt"},"biz_opaque_callback_data":"idem-1"}`,
		},
		{
			name: "generic send: reaction",
			send: func(c *Client) (SendResult, error) {
				return c.Send(context.Background(), testPNID, Message{RecipientType: "individual", To: testTo, Type: "reaction", Reaction: &Reaction{MessageID: "wamid.IN", Emoji: "👍"}})
			},
			want: `{"messaging_product":"whatsapp","recipient_type":"individual","to":"16505551234","type":"reaction","reaction":{"message_id":"wamid.IN","emoji":"👍"}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := endpoint(t, http.StatusOK, sendOK, nil)
			res, err := tc.send(newTestClient(t, srv.URL))
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if diff := cmp.Diff(SendResult{MessageID: "wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", WaID: testTo}, res); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			r := got()
			if diff := cmp.Diff(recorded{Method: "POST", Path: "/v24.0/" + testPNID + "/messages", Auth: "Bearer " + testToken,
				ContentType: "application/json", Body: want}, r); diff != "" {
				t.Errorf("request (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestMarkRead(t *testing.T) {
	t.Parallel()
	srv, got := endpoint(t, http.StatusOK, `{"success":true}`, nil)
	if err := newTestClient(t, srv.URL).MarkRead(context.Background(), testPNID, "wamid.IN"); err != nil {
		t.Fatalf("MarkRead: %v", err)
	}
	want := recorded{Method: "POST", Path: "/v24.0/" + testPNID + "/messages", Auth: "Bearer " + testToken, ContentType: "application/json",
		Body: map[string]any{"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.IN"}}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("request (-want, +got):\n%s", diff)
	}

	srv2, _ := endpoint(t, http.StatusOK, `{"success":false}`, nil)
	if err := newTestClient(t, srv2.URL).MarkRead(context.Background(), testPNID, "wamid.IN"); !errors.Is(err, ErrUnexpectedResponse) {
		t.Errorf("MarkRead with success false = %v; want ErrUnexpectedResponse", err)
	}
}

func metaError(code int, typ, msg string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"code":%d,"error_data":{"messaging_product":"whatsapp","details":"details here"},"fbtrace_id":"AbCdEfGh123"}}`, msg, typ, code)
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		body      string
		headers   map[string]string
		wantKind  Kind
		wantCode  int
		retryable bool
	}{
		{"400 + 130429 rate limit", 400, metaError(130429, "OAuthException", "(#130429) Rate limit hit"), nil, Throttled, 130429, true},
		{"400 + 131056 pair rate limit", 400, metaError(131056, "OAuthException", "(#131056) (Business Account, Consumer Account) pair rate limit hit"), nil, Throttled, 131056, true},
		{"400 + 4 app rate limit", 400, metaError(4, "OAuthException", "(#4) Application request limit reached"), nil, Throttled, 4, true},
		{"400 + 80007 WABA rate limit", 400, metaError(80007, "OAuthException", "(#80007) Rate limit issues"), nil, Throttled, 80007, true},
		{"429 without a body", 429, ``, nil, Throttled, 0, true},
		{"500 without a body", 500, `<html>oops</html>`, nil, Temporary, 0, true},
		{"502 from a proxy", 502, `Bad Gateway`, nil, Temporary, 0, true},
		{"503 + code 1", 503, metaError(1, "OAuthException", "An unknown error occurred"), nil, Temporary, 1, true},
		{"400 + code 2", 400, metaError(2, "OAuthException", "Service temporarily unavailable"), nil, Temporary, 2, true},
		{"500 + 131000", 500, metaError(131000, "OAuthException", "(#131000) Something went wrong"), nil, Temporary, 131000, true},
		{"503 + 133004", 503, metaError(133004, "OAuthException", "(#133004) Server temporarily unavailable"), nil, Temporary, 133004, true},
		{"400 + 131016", 400, metaError(131016, "OAuthException", "(#131016) Service unavailable"), nil, Temporary, 131016, true},
		{"401 + 190 token expired", 401, metaError(190, "OAuthException", "Error validating access token: Session has expired"), nil, Auth, 190, false},
		{"403 + 10 permission", 403, metaError(10, "OAuthException", "(#10) Application does not have permission for this action"), nil, Auth, 10, false},
		{"400 + 200 permission", 400, metaError(200, "OAuthException", "(#200) Permissions error"), nil, Auth, 200, false},
		{"401 without a body", 401, ``, nil, Auth, 0, false},
		{"400 + 100 invalid parameter", 400, metaError(100, "OAuthException", "(#100) Invalid parameter"), nil, Permanent, 100, false},
		{"400 + 131026 undeliverable", 400, metaError(131026, "OAuthException", "(#131026) Message undeliverable"), nil, Permanent, 131026, false},
		{"400 + 131047 re-engagement", 400, metaError(131047, "OAuthException", "(#131047) Re-engagement message"), nil, Permanent, 131047, false},
		{"400 + 131051 unsupported type", 400, metaError(131051, "OAuthException", "(#131051) Unsupported message type"), nil, Permanent, 131051, false},
		{"400 + 131052 media download", 400, metaError(131052, "OAuthException", "(#131052) Media download error"), nil, Permanent, 131052, false},
		{"400 + 131053 media upload", 400, metaError(131053, "OAuthException", "(#131053) Media upload error"), nil, Permanent, 131053, false},
		{"500 + 131026: a known permanent code stays permanent", 500, metaError(131026, "OAuthException", "(#131026) Message undeliverable"), nil, Permanent, 131026, false},
		{"400 + 131062 BSUID not allowed", 400, metaError(131062, "OAuthException", "(#131062) Business-scoped user id not allowed for this message"), nil, Permanent, 131062, false},
		{"500 + 131062 stays permanent", 500, metaError(131062, "OAuthException", "(#131062) Business-scoped user id not allowed for this message"), nil, Permanent, 131062, false},
		{"500 + unknown code", 500, metaError(999999, "OAuthException", "(#999999) New error"), nil, Temporary, 999999, true},
		{"400 + unknown code", 400, metaError(999999, "OAuthException", "(#999999) New error"), nil, Permanent, 999999, false},
		{"200 with garbage", 200, `<html>captive portal</html>`, nil, Permanent, 0, false},
		{"200 without a message id", 200, `{"messaging_product":"whatsapp","messages":[]}`, nil, Permanent, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := endpoint(t, tc.status, tc.body, tc.headers)
			_, err := newTestClient(t, srv.URL).SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
			var ge *Error
			if !errors.As(err, &ge) {
				t.Fatalf("error = %v (%T); want *graph.Error", err, err)
			}
			if ge.Kind != tc.wantKind || Classify(err) != tc.wantKind || ge.Code != tc.wantCode || ge.HTTPStatus != tc.status {
				t.Errorf("got kind %s (Classify %s), code %d, status %d; want %s, %d, %d", ge.Kind, Classify(err), ge.Code, ge.HTTPStatus, tc.wantKind, tc.wantCode, tc.status)
			}
			if IsRetryable(err) != tc.retryable {
				t.Errorf("IsRetryable = %v; want %v", IsRetryable(err), tc.retryable)
			}
			// Wrapped errors classify the same.
			if Classify(fmt.Errorf("process outbound: %w", err)) != tc.wantKind {
				t.Errorf("Classify of a wrapped error differs")
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	t.Parallel()
	srv, _ := endpoint(t, 400, `{"error":{"message":"(#130429) Rate limit hit","type":"OAuthException","code":130429,"error_subcode":2494055,
		"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because there were too many messages"},"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`,
		map[string]string{"Retry-After": "30"})
	_, err := newTestClient(t, srv.URL).SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error = %v; want *graph.Error", err)
	}
	want := &Error{HTTPStatus: 400, Code: 130429, Subcode: 2494055, Type: "OAuthException", Message: "(#130429) Rate limit hit",
		Details: "Message failed to send because there were too many messages", FBTraceID: "Az8or2yhqkZfEZ-_4Qn_Bam", RetryAfter: 30 * time.Second, Kind: Throttled}
	if diff := cmp.Diff(want, ge, cmp.AllowUnexported(Error{})); diff != "" {
		t.Errorf("Error (-want, +got):\n%s", diff)
	}
	if RetryAfter(fmt.Errorf("wrapped: %w", err)) != 30*time.Second {
		t.Errorf("RetryAfter = %s; want 30s", RetryAfter(err))
	}
	const wantMsg = "graph api: HTTP 400, code 130429/2494055 (OAuthException): (#130429) Rate limit hit [throttled, retry after 30s, fbtrace_id=Az8or2yhqkZfEZ-_4Qn_Bam]"
	if got := err.Error(); got != wantMsg {
		t.Errorf("Error() = %q\nwant      %q", got, wantMsg)
	}
}

// TestErrorStringIsSafe: error strings end up in logs, so they must carry neither the token,
// nor the text sent, nor a phone number.
func TestErrorStringIsSafe(t *testing.T) {
	t.Parallel()
	const text = "my secret order details"
	srv, _ := endpoint(t, 401, `{"error":{"message":"Malformed access token `+testToken+` for +1 650-555-1234","type":"OAuthException","code":190,
		"error_data":{"details":"to 16505551234: `+text+`"},"fbtrace_id":"X"}}`, nil)
	_, err := newTestClient(t, srv.URL).SendText(context.Background(), testPNID, testTo, Text{Body: text}, SendOptions{})
	if err == nil {
		t.Fatal("want an error")
	}
	s := err.Error()
	for _, leak := range []string{testToken, text, "16505551234", "650-555-1234"} {
		if strings.Contains(s, leak) {
			t.Errorf("Error() %q contains %q", s, leak)
		}
	}
	var ge *Error
	errors.As(err, &ge)
	if strings.Contains(ge.Message, testToken) || strings.Contains(ge.Details, testToken) {
		t.Errorf("token kept in fields: %+v", ge)
	}
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		c, err := NewClient(srv.URL, testToken, &http.Client{Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
		if Classify(err) != Temporary || !IsRetryable(err) {
			t.Errorf("timeout: Classify = %s (%v); want temporary", Classify(err), err)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newTestClient(t, srv.URL).SendText(ctx, testPNID, testTo, Text{Body: "hello"}, SendOptions{})
		if Classify(err) != Temporary || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadline: Classify = %s (%v); want temporary wrapping DeadlineExceeded", Classify(err), err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		_, err = newTestClient(t, "http://"+addr).SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
		if Classify(err) != Temporary {
			t.Errorf("refused: Classify = %s (%v); want temporary", Classify(err), err)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("error leaks the token: %v", err)
		}
	})
	t.Run("connection dropped mid-response", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"mess"))
			conn.Close()
		}))
		t.Cleanup(srv.Close)
		_, err := newTestClient(t, srv.URL).SendText(context.Background(), testPNID, testTo, Text{Body: "hello"}, SendOptions{})
		if Classify(err) != Temporary {
			t.Errorf("dropped: Classify = %s (%v); want temporary", Classify(err), err)
		}
	})
}

func TestClassifyPlainErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want Kind
	}{
		{nil, KindNone},
		{context.DeadlineExceeded, Temporary},
		{fmt.Errorf("send: %w", context.Canceled), Temporary},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}, Temporary},
		{io.ErrUnexpectedEOF, Temporary},
		{fmt.Errorf("send: %w", ErrInvalidMessage), Permanent},
		{errors.New("something else"), Permanent},
	}
	for _, tc := range cases {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %s; want %s", tc.err, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 9, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"30", 30 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"abc", 0},
		{"999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tc := range cases {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s; want %s", tc.in, got, tc.want)
		}
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	srv, _ := endpoint(t, http.StatusOK, sendOK, nil)
	c := newTestClient(t, srv.URL)
	ctx := context.Background()
	four := []Button{{"a", "A"}, {"b", "B"}, {"c", "C"}, {"d", "D"}}
	rows := make([]Row, 11)
	for i := range rows {
		rows[i] = Row{ID: fmt.Sprint(i), Title: fmt.Sprint(i)}
	}
	cases := map[string]error{
		"empty text":      second(c.SendText(ctx, testPNID, testTo, Text{}, SendOptions{})),
		"four buttons":    second(c.SendButtons(ctx, testPNID, testTo, Buttons{Body: "b", Buttons: four}, SendOptions{})),
		"no buttons":      second(c.SendButtons(ctx, testPNID, testTo, Buttons{Body: "b"}, SendOptions{})),
		"untitled button": second(c.SendButtons(ctx, testPNID, testTo, Buttons{Body: "b", Buttons: []Button{{ID: "x"}}}, SendOptions{})),
		"eleven rows":     second(c.SendList(ctx, testPNID, testTo, List{Body: "b", ButtonText: "x", Sections: []Section{{Rows: rows}}}, SendOptions{})),
		"no sections":     second(c.SendList(ctx, testPNID, testTo, List{Body: "b", ButtonText: "x"}, SendOptions{})),
		"nameless tmpl":   second(c.SendTemplate(ctx, testPNID, testTo, Template{Language: Language{Code: "en"}}, SendOptions{})),
		"no recipient":    second(c.Send(ctx, testPNID, Message{Type: "text", Text: &Text{Body: "x"}})),
		"bad phone id":    second(c.Send(ctx, "1/../2", Message{To: testTo, Type: "text", Text: &Text{Body: "x"}})),
		"mark read no id": c.MarkRead(ctx, testPNID, ""),
	}
	for name, err := range cases {
		if !errors.Is(err, ErrInvalidMessage) || Classify(err) != Permanent {
			t.Errorf("%s: error = %v; want ErrInvalidMessage, permanent", name, err)
		}
	}
}

func second(_ SendResult, err error) error { return err }

func TestNewClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, token string }{{"", "EAAsecret"}, {"graph.facebook.com", "EAAsecret"}, {"ftp://x", "EAAsecret"}} {
		if _, err := NewClient(tc.base, tc.token, nil); err == nil {
			t.Errorf("NewClient(%q, %q) succeeded; want an error", tc.base, tc.token)
		} else if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("error leaks the token")
		}
	}
	c, err := NewClient("https://graph.facebook.com/v24.0", "t", nil)
	if err != nil || c.hc.Timeout != DefaultTimeout {
		t.Errorf("NewClient default http client: %v, timeout %v", err, c.hc.Timeout)
	}
}

// TestWithToken: a client with no token makes no call; WithToken gives each call its own token
// and leaves the original untouched.
func TestWithToken(t *testing.T) {
	t.Parallel()
	srv, got := endpoint(t, 200, `{"messages":[{"id":"wamid.1"}]}`, nil)
	c, err := NewClient(srv.URL+"/v24.0", "", nil)
	if err != nil {
		t.Fatalf("NewClient without a token: %v", err)
	}
	if _, err := c.SendText(context.Background(), testPNID, testTo, Text{Body: "hi"}, SendOptions{}); !errors.Is(err, ErrNoToken) {
		t.Fatalf("send without a token: %v, want ErrNoToken", err)
	}
	if got().Method != "" {
		t.Fatal("a call without a token reached the server")
	}
	for _, tok := range []string{"EAAtenant-a", "EAAtenant-b"} {
		if _, err := c.WithToken(tok).SendText(context.Background(), testPNID, testTo, Text{Body: "hi"}, SendOptions{}); err != nil {
			t.Fatalf("send with %s: %v", tok, err)
		}
		if a := got().Auth; a != "Bearer "+tok {
			t.Errorf("Authorization %q, want Bearer %s", a, tok)
		}
	}
	if c.token != "" {
		t.Error("WithToken changed the original client")
	}
}
