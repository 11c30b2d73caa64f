package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/contact"
)

// TestHoldForChoice: the messages of a person who must choose a tenant on a shared number are
// held under whichever of their identifiers each came with, and all come back to the person
// known by both, in Meta's order, not the order they arrived in; only the first asks (a retry of its hold asks again, a later message does not);
// a choice ends the question, so the next hold asks again; dropped messages are gone.
func TestHoldForChoice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTenants(t)
	const number = "555000111"
	person := contact.Identity{WaID: "6281234", UserID: "ID.777"}
	hold := func(id, ts string, who contact.Identity) bool {
		t.Helper()
		ask, err := s.HoldForChoice(ctx, number, id, ts, who, []byte(id))
		if err != nil {
			t.Fatal(err)
		}
		return ask
	}
	if !hold("wamid.b", "1700000002", person) {
		t.Error("the first message held did not ask")
	}
	if !hold("wamid.b", "1700000002", person) {
		t.Error("a retry of the first message's hold did not ask (its list may not be queued yet)")
	}
	if hold("wamid.a", "1700000001", contact.Identity{UserID: "ID.777"}) {
		t.Error("a later message, by BSUID alone, asked again")
	}
	if hold("wamid.c", "1700000003", contact.Identity{WaID: "6281234"}) {
		t.Error("a later message, by phone alone, asked again")
	}
	if !hold("wamid.x", "1700000001", contact.Identity{WaID: "6289999"}) {
		t.Error("another person's first message did not ask")
	}
	held, err := s.HeldMessages(ctx, number, person)
	if err != nil {
		t.Fatal(err)
	}
	var bodies, refs []string
	for _, h := range held {
		bodies, refs = append(bodies, string(h.Body)), append(refs, h.Ref)
	}
	if diff := cmp.Diff([]string{"wamid.a", "wamid.b", "wamid.c"}, bodies); diff != "" {
		t.Errorf("held messages (-want +got):\n%s", diff)
	}
	if err := s.ChooseOnNumber(ctx, number, "acme", person); err != nil {
		t.Fatal(err)
	}
	if err := s.DropHeld(ctx, number, refs); err != nil {
		t.Fatal(err)
	}
	if held, err := s.HeldMessages(ctx, number, person); err != nil || len(held) != 0 {
		t.Errorf("after the drop: %d held, %v", len(held), err)
	}
	if !hold("wamid.d", "1700000004", person) {
		t.Error("the first message after a choice did not ask")
	}
	sc, err := s.SharedContact(ctx, number, nil, person)
	if err != nil || sc.Chosen != "acme" {
		t.Errorf("the choice: %+v, %v; want acme", sc, err)
	}
}
