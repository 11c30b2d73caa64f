package tenant

import "testing"

// TestParseActionURL: the one form check of an action URL, which tenant files and the action
// client share; the messages are the ones `tenants apply` shows.
func TestParseActionURL(t *testing.T) {
	t.Parallel()
	const want = "must be an absolute https:// URL (http:// only to a loopback host such as 127.0.0.1, with APP_ENV=dev)"
	tests := []struct{ raw, want string }{
		{"https://ops.example.com/a", ""},
		{"http://127.0.0.1:8080/a", ""},
		{"http://[::1]/a", ""},
		{"http://LOCALHOST/a", ""},
		{"http://ops.example.com/a", want},
		{"http://10.0.0.1/a", want},
		{"ftp://ops.example.com/a", want},
		{"ops.example.com/a", want},
		{"https://", want},
		{"https://u:p@ops.example.com/a", "must not carry a user or password: wapipe signs each call with the action secret"},
	}
	for _, tc := range tests {
		u, err := ParseActionURL(tc.raw)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ParseActionURL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
		if (u == nil) == (tc.want == "") {
			t.Errorf("ParseActionURL(%q) URL = %v with error %q", tc.raw, u, got)
		}
	}
}
