package delivery_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
)

// namedWindow is a conversation whose window closed a day ago, with the contact's profile name.
type namedWindow struct {
	name string
	last time.Time
}

func (w namedWindow) Get(_ context.Context, id string) (store.Conversation, error) {
	if id != conversationID {
		return store.Conversation{}, store.ErrNotFound
	}
	return store.Conversation{ID: id, LastInboundAt: w.last, ContactName: w.name}, nil
}

// TestReengageFillsContactName: a reply outside the window goes as the reengage template with
// {{contact_name}} filled: the profile name Meta sent, else the member's name in the file, else
// the localized "customer" of the contact's language; text around it and other parameters as
// written.
func TestReengageFillsContactName(t *testing.T) {
	t.Parallel()
	file := "id: acme\nname: Acme\nlanguage: fr\naudience: public\n" +
		"phone_numbers:\n  - {phone_number_id: \"" + number + "\", waba_id: \"900\"}\n" +
		"members:\n  - {wa_id: \"33600000001\", name: Agus, language: id}\n  - {wa_id: \"33600000002\", language: id}\n" +
		"templates:\n  reengage:\n    name: hello_again\n    language: fr\n    components:\n" +
		"      - type: body\n        parameters:\n          - {type: text, text: \"Bonjour {{contact_name}} !\"}\n          - {type: text, text: \"42\"}\n"
	for _, tc := range []struct{ name, profile, to, want string }{
		{"profile name", "Sheena Nelson", contact, "Bonjour Sheena Nelson !"},
		{"member's name", "", "33600000001", "Bonjour Agus !"},
		{"member's language", "", "33600000002", "Bonjour pelanggan !"},
		{"tenant's language", "", contact, "Bonjour client !"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, fake := templateDeliverer(t, file, namedWindow{name: tc.profile, last: time.Now().Add(-30 * time.Hour)})
			res := d.Deliver(ctx, delivery.Request{Kind: delivery.ConversationReply, Key: "k-" + tc.to, TenantID: "acme",
				PhoneNumberID: number, To: tc.to, ConversationID: conversationID, LastInbound: time.Now().Add(-30 * time.Hour), Reply: outgoing.Message{Text: "hello"}})
			if res.Status != delivery.Sent {
				t.Fatalf("Deliver: %+v, want sent", res)
			}
			sends := fake.Sends()
			if len(sends) != 1 {
				t.Fatalf("%d sends, want 1", len(sends))
			}
			tpl, _ := sends[0].Body["template"].(map[string]any)
			comps, _ := tpl["components"].([]any)
			if tpl["name"] != "hello_again" || len(comps) != 1 {
				t.Fatalf("sent %v, want hello_again with one component", sends[0].Body)
			}
			params, _ := comps[0].(map[string]any)["parameters"].([]any)
			if len(params) != 2 || params[0].(map[string]any)["text"] != tc.want || params[1].(map[string]any)["text"] != "42" {
				t.Errorf("parameters %v, want %q then 42", params, tc.want)
			}
		})
	}
}

// templateDeliverer is a Deliverer of tenant file (applied, with a token) against the Firestore
// emulator and a fake Graph API that knows the template hello_again, whose windows are w.
func templateDeliverer(t *testing.T, file string, w delivery.Windows) (*delivery.Deliverer, *graphfake.Fake) {
	t.Helper()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	fake := graphfake.New(graphfake.WithToken(token))
	fake.AddTemplate("hello_again")
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	gc, err := graph.NewClient(srv.URL+"/"+graph.Version, "", &http.Client{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts := &tenants{Tenants: store.NewTenants(db, store.Options{})}
	tn, err := tenant.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.SetAccessToken(ctx, "acme", []byte(token)); err != nil {
		t.Fatal(err)
	}
	return &delivery.Deliverer{Records: store.NewOutbound(db, store.Options{}), Sends: store.NewSends(db, store.Options{}),
		Sender: delivery.NewGraphSender(gc), Tenants: ts, Tokens: tokens{}, Hasher: logging.DevHasher(), Windows: w}, fake
}
