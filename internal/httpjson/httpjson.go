// Package httpjson writes JSON answers for wapipe's HTTP services, the one way both the webhook
// and the worker answer: encoded into a buffer first, so a failure never leaves half a response.
package httpjson

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// internalError is the answer when v cannot be encoded: it says nothing about why, which is a
// defect for the logs, not for the caller.
var internalError = []byte(`{"status":"error","error":"internal"}`)

// Write answers code with v as JSON on one line. The body is encoded before anything is written,
// and its length is declared, so the client can finish reading before the handler returns (the
// webhook flushes its answer, then records it).
func Write(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, internalError
	}
	b = append(b[:len(b):len(b)], '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
