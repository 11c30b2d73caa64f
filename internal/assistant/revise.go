package assistant

import (
	"fmt"
	"strings"

	"github.com/wapipe/wapipe/internal/whatsapp"
)

// The events of a revoke or an edit that is not a correction: nothing is sent and the turn is not
// added to the history (the message it changes is there already).
const (
	EventRevoked = "message_revoked" // the contact deleted a message
	EventEdited  = "message_edited"  // the contact edited a message no pending action came from
)

// ReasonPendingRevoked refines EventRevoked: the deleted message was the one the pending action
// came from, and the action was dropped.
const ReasonPendingRevoked = "pending_revoked"

// revise handles a revoke or an edit before anything else. A revoke, and an edit of a message no
// pending action came from (or in mode ack), end the turn with nothing sent. An edit of the
// message the pending action came from is a correction: the action is dropped and the new
// content goes on as a fresh turn (done false).
func (t *turn) revise(llmMode bool) (done bool) {
	m := t.in.Message
	text := ""
	if m.Type == "edit" {
		text = m.Text
	}
	st, fromPending := t.state.Revised(m.OriginalID, text)
	t.state = st
	switch {
	case m.Type == "revoke":
		t.event = EventRevoked
		if fromPending {
			t.state.Pending, t.reason = nil, ReasonPendingRevoked
		}
		return true
	case !llmMode || !fromPending || strings.TrimSpace(text) == "":
		t.event = EventEdited
		return true
	}
	t.dropped, t.state.Pending = t.state.Pending, nil
	t.corrected = true
	return false
}

// orderText is a catalogue order as the model reads it: one line per item, then the note.
func orderText(o *whatsapp.OrderInfo) string {
	var b strings.Builder
	b.WriteString("[order]")
	if o.CatalogID != "" {
		fmt.Fprintf(&b, " catalog: %s;", o.CatalogID)
	}
	for _, it := range o.Items {
		fmt.Fprintf(&b, "\n- %s x %s", orOne(it.Quantity), it.ProductRetailerID)
		if it.ItemPrice != "" {
			fmt.Fprintf(&b, " at %s %s each", it.ItemPrice, it.Currency)
		}
	}
	if s := strings.TrimSpace(o.Text); s != "" {
		fmt.Fprintf(&b, "\nnote: %s", s)
	}
	return b.String()
}

func orOne(q string) string {
	if q == "" {
		return "1"
	}
	return q
}
