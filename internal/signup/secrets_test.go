package signup

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHideSignupSecrets: on the signup routes the state and code leave the URL (what tracing and
// any request log see) for the request's context; other routes and parameters are untouched.
func TestHideSignupSecrets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		target, wantURI, wantState, wantCode string
	}{
		{CallbackPath + "?code=c0de&state=st4te", CallbackPath, "st4te", "c0de"},
		{CallbackPath + "?error=access_denied&state=st4te", CallbackPath + "?error=access_denied", "st4te", ""},
		{ConnectPath + "?state=l1nk", ConnectPath, "l1nk", ""},
		{"/v1/messages/x?state=kept", "/v1/messages/x?state=kept", "", ""},
	}
	for _, c := range cases {
		var uri, raw string
		var sec signupSecrets
		h := HideSecrets(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			uri, raw, sec = r.RequestURI, r.URL.String(), signupSecretsFrom(r.Context())
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, c.target, nil))
		if uri != c.wantURI || raw != c.wantURI || sec.state != c.wantState || sec.code != c.wantCode {
			t.Errorf("%s: handler saw %q / %q with state %q code %q; want %q, state %q code %q",
				c.target, uri, raw, sec.state, sec.code, c.wantURI, c.wantState, c.wantCode)
		}
	}
}

// TestTraceableGraphCall: Graph calls carrying a secret in the query are not traced.
func TestTraceableGraphCall(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"https://graph.facebook.com/v24.0/oauth/access_token?client_id=1&client_secret=s&code=c": false,
		"https://graph.facebook.com/v24.0/debug_token?input_token=t":                             false,
		"https://graph.facebook.com/v24.0/123/phone_numbers":                                     true,
		"https://graph.facebook.com/v24.0/123/subscribed_apps":                                   true,
	}
	for u, want := range cases {
		if got := TraceableGraphCall(httptest.NewRequest(http.MethodGet, u, nil)); got != want {
			t.Errorf("%s: traced %v, want %v", u, got, want)
		}
	}
}
