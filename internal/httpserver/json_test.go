package httpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/httpserver"
)

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		code     int
		v        any
		wantCode int
		wantBody string
	}{
		{"object", http.StatusOK, map[string]string{"status": "accepted"}, 200, `{"status":"accepted"}` + "\n"},
		{"error status kept", http.StatusServiceUnavailable, map[string]any{"status": "retry"}, 503, `{"status":"retry"}` + "\n"},
		{"unencodable", http.StatusOK, map[string]any{"f": func() {}}, 500, `{"status":"error","error":"internal"}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			httpserver.WriteJSON(rec, tc.code, tc.v)
			if rec.Code != tc.wantCode {
				t.Errorf("status %d, want %d", rec.Code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantBody, rec.Body.String()); diff != "" {
				t.Errorf("body (-want, +got):\n%s", diff)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if got, want := rec.Header().Get("Content-Length"), len(tc.wantBody); got != strconv.Itoa(want) {
				t.Errorf("Content-Length %s, want %d", got, want)
			}
		})
	}
}
