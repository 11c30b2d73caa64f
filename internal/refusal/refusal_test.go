package refusal_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/wapipe/wapipe/internal/refusal"
)

// TestBody: a refusal travels as {"error":{"code","message"}}, its status never in the body,
// and comes back whole.
func TestBody(t *testing.T) {
	t.Parallel()
	ref := refusal.WithStatus(http.StatusConflict, refusal.NoToken, "m")
	data, err := json.Marshal(refusal.Body{Error: ref})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"error":{"code":"no_token","message":"m"}}`; string(data) != want {
		t.Errorf("body %s, want %s", data, want)
	}
	var back refusal.Body
	if err := json.Unmarshal(data, &back); err != nil || back.Error == nil || *back.Error != (refusal.Error{Code: refusal.NoToken, Message: "m"}) {
		t.Errorf("read back %+v %v, want the code and message", back.Error, err)
	}
}

// TestAs: a refusal is found through wrapping; another error is not one.
func TestAs(t *testing.T) {
	t.Parallel()
	ref := refusal.New(refusal.OutsideWindow, "m")
	if got, ok := refusal.As(fmt.Errorf("send: %w", ref)); !ok || got != ref {
		t.Errorf("As(wrapped) = %v %v, want the refusal", got, ok)
	}
	if _, ok := refusal.As(fmt.Errorf("firestore: unavailable")); ok {
		t.Error("As took a dependency's error for a refusal")
	}
	if got, want := ref.Error(), "outside_customer_service_window: m"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := refusal.WithStatus(404, refusal.MediaGone, "m").Error(), "404 media_gone: m"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
