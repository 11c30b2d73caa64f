package graph

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzErrorBody feeds arbitrary response bodies, statuses and Retry-After values to the Graph
// error parser and classifier: nothing may panic, the classification is one of the kinds, and the
// error text never quotes the access token.
func FuzzErrorBody(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
		after  string
	}{
		{400, `{"error":{"message":"(#131026) Message undeliverable","type":"OAuthException","code":131026,"error_data":{"details":"x"},"fbtrace_id":"A"}}`, ""},
		{400, `{"error":{"code":130429,"message":"Rate limit hit"}}`, "30"},
		{401, `{"error":{"code":190,"message":"Malformed access token EAAtesttoken123"}}`, ""},
		{500, `{"error":{"code":"2"}}`, "Wed, 21 Oct 2015 07:28:00 GMT"},
		{502, `<html>Bad Gateway</html>`, ""},
		{503, `{"error":null}`, "-1"},
		{429, `{"error":{"code":4,"error_subcode":2494055}}`, "99999999999999999999"},
		{404, ``, ""},
	} {
		f.Add(seed.status, []byte(seed.body), seed.after)
	}
	c := &Client{token: testToken, now: func() time.Time { return time.Unix(1763800000, 0) }}
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		resp := &http.Response{StatusCode: status, Header: http.Header{}}
		resp.Header.Set("Retry-After", retryAfter)
		e := c.apiError(resp, body)
		var err error = fmt.Errorf("send: %w", e)
		switch k := Classify(err); k {
		case Permanent, Temporary, Throttled, Auth:
		default:
			t.Fatalf("Classify = %s, want one of the failure kinds", k)
		}
		if e.RetryAfter < 0 || e.RetryAfter > 24*time.Hour+time.Second {
			t.Fatalf("RetryAfter = %s", e.RetryAfter)
		}
		if strings.Contains(err.Error(), testToken) {
			t.Fatalf("error text quotes the token: %s", err)
		}
		var ge *Error
		if !errors.As(err, &ge) || NotSent(err) || IsRetryable(err) != (ge.Kind == Temporary || ge.Kind == Throttled) {
			t.Fatalf("inconsistent error: %+v", ge)
		}
	})
}
