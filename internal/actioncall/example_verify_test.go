package actioncall_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
)

// VerifySignature checks an action call as a business receives it, with the standard library
// alone (copy it into your service): secret is the action secret exactly as
// `wapipe tenants action-secret` printed it, body the raw request body (before any JSON
// parsing), idempotencyKey the Idempotency-Key header, header the X-Wapipe-Signature-256
// header. A call signed more than five minutes from now is refused: a replay.
func VerifySignature(secret, body []byte, idempotencyKey, header string, now time.Time) error {
	const tolerance = 5 * time.Minute
	if len(secret) == 0 {
		return errors.New("no secret")
	}
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			if ts != "" {
				return errors.New("more than one t")
			}
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec < 0 || strings.HasPrefix(ts, "+") {
		return errors.New("no valid t")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "." + idempotencyKey + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	ok := false
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		ok = (err == nil && hmac.Equal(want, got)) || ok
	}
	if !ok {
		return errors.New("signature does not match")
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return errors.New("signature too old")
	}
	return nil
}

// A business's handler refuses a call whose signature does not verify (401) before reading
// the action, then runs the action at most once per Idempotency-Key.
func Example_verifySignature() {
	secret := []byte("whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG") // as action-secret printed it
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if err := VerifySignature(secret, body, key, r.Header.Get("X-Wapipe-Signature-256"), time.Now()); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// Decode body, run the action once for key, answer {"reply":"…"}.
		fmt.Fprint(w, `{"reply":"Booked"}`)
	})

	// What wapipe sends, and the same call replayed ten minutes later.
	body := []byte(`{"action_id":"act_1","intent":"create_booking"}`)
	for _, sent := range []time.Time{time.Now(), time.Now().Add(-10 * time.Minute)} {
		req := httptest.NewRequest(http.MethodPost, "/wapipe/actions", strings.NewReader(string(body)))
		req.Header.Set("Idempotency-Key", "act_1")
		req.Header.Set("X-Wapipe-Signature-256", actioncall.Sign(secret, sent, "act_1", body))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 200
	// 401
}
