package httpserver

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// internalJSON is the answer when v cannot be encoded: it says nothing about why, which is a
// defect for the logs, not for the caller.
var internalJSON = []byte(`{"status":"error","error":"internal"}`)

// WriteJSON answers code with v as JSON on one line, the one way wapipe's services answer JSON.
// The body is encoded before anything is written, so a failure never leaves half a response, and
// its length is declared, so the client can finish reading before the handler returns (the
// webhook flushes its answer, then records it).
func WriteJSON(w http.ResponseWriter, code int, v any) { WriteJSONOr(w, code, v, internalJSON) }

// WriteJSONOr is WriteJSON whose answer, when v cannot be encoded, is 500 with internal: the
// service's own error shape (the api's {"error":{"code","message"}}).
func WriteJSONOr(w http.ResponseWriter, code int, v any, internal []byte) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, internal
	}
	b = append(b[:len(b):len(b)], '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
