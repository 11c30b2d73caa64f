package responder_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

func TestTenantAck(t *testing.T) {
	t.Parallel()
	fr := &tenant.Tenant{ID: "bus-fr", Language: "fr", Assistant: tenant.Assistant{Mode: tenant.ModeAck}}
	custom := &tenant.Tenant{ID: "bus-en", Language: "en", Assistant: tenant.Assistant{Mode: tenant.ModeAck, AckText: "Got it, Acme Bus."}}
	llm := &tenant.Tenant{ID: "bus-llm", Language: "id", Assistant: tenant.Assistant{Mode: tenant.ModeLLM}}
	text := whatsapp.Message{Type: "text", Text: "hello"}
	tests := []struct {
		name string
		turn responder.Turn
		want outgoing.Message
	}{
		{"tenant language", responder.Turn{Tenant: fr, Message: text}, outgoing.Message{Text: i18n.Text("fr", i18n.Ack), Quote: true}},
		{"member language wins", responder.Turn{Tenant: fr, Member: tenant.Member{Language: "es"}, Message: text}, outgoing.Message{Text: i18n.Text("es", i18n.Ack), Quote: true}},
		{"ack_text exactly", responder.Turn{Tenant: custom, Member: tenant.Member{Language: "fr"}, Message: text}, outgoing.Message{Text: "Got it, Acme Bus.", Quote: true}},
		{"llm mode gets the ack for now", responder.Turn{Tenant: llm, Message: text}, outgoing.Message{Text: i18n.Text("id", i18n.Ack), Quote: true}},
		{"media", responder.Turn{Tenant: fr, Message: whatsapp.Message{Type: "image"}}, outgoing.Message{Text: i18n.Text("fr", i18n.Ack), Quote: true}},
		{"system notice", responder.Turn{Tenant: fr, Message: whatsapp.Message{Type: "system"}}, outgoing.Message{}},
		{"reaction removed", responder.Turn{Tenant: fr, Message: whatsapp.Message{Type: "reaction", Reaction: &whatsapp.Reaction{MessageID: "m"}}}, outgoing.Message{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := responder.TenantAck{}.RespondTo(context.Background(), tc.turn)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reply (-want, +got):\n%s", diff)
			}
		})
	}
}
