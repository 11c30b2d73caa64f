package signup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/devstack"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// The stack's tenant acme: its number in wabaAcme, a contact, and the token the stack gave it.
const (
	number  = "200000000000101"
	contact = "33612345678"
	token   = devstack.DevAccessToken
)

// stack is the whole pipeline, with the api that mounts the flow, one tenant "acme" (number,
// token) and an API key of it, to read its sends' states.
type stack struct {
	*devstack.Stack
	t     testing.TB
	db    *store.DB
	creds *operator.Credentials
	key   string
	logs  *testenv.LogBuffer
}

// newStack starts the stack with acme applied as `wapipe tenants apply` would, and the
// operator's credentials commands over it (connect-link, set-token).
func newStack(t testing.TB) *stack {
	t.Helper()
	fs, project := testenv.Firestore(t)
	logs := &testenv.LogBuffer{}
	acme := fmt.Sprintf("id: acme\nname: Acme\nlanguage: en\naudience: public\nphone_numbers:\n  - {phone_number_id: %q, waba_id: %q}\n", number, wabaAcme)
	st, err := devstack.Start(context.Background(), devstack.Options{
		FirestoreHost: testenv.FirestoreHost(t), Project: project, Queues: testenv.FastQueues(t), Tenants: [][]byte{[]byte(acme)},
		Logs: func(string) io.Writer { return logs },
	})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(st.Stop)
	keeper, err := secrets.New(context.Background(), secrets.Config{Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keeper.Close() })
	db := store.NewDB(fs)
	creds := &operator.Credentials{Tenants: &operator.Tenants{Store: store.NewTenants(db, store.Options{}), Sealer: keeper},
		Keys: store.NewAPIKeys(db, store.Options{}), PublicBaseURL: st.APIURL}
	key, err := creds.APIKey(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return &stack{Stack: st, t: t, db: db, creds: creds, key: key, logs: logs}
}

// waitStatus polls GET /v1/messages/{id} until it says want.
func (s *stack) waitStatus(id, want string) {
	s.t.Helper()
	var last string
	testenv.Eventually(s.t, 20*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, s.APIURL+"/v1/messages/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct{ Status string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		last = body.Status
		return last == want
	}, "message %s never %s (last %q)", id, want, &last)
}

// sendsWithKey are the sends the fake accepted carrying key as callback data.
func (s *stack) sendsWithKey(key string) []graphfake.Request {
	var out []graphfake.Request
	for _, r := range s.Graph.Sends() {
		if r.Body["biz_opaque_callback_data"] == key {
			out = append(out, r)
		}
	}
	return out
}
