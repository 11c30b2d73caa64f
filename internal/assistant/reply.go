package assistant

import (
	"strings"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/responder"
)

// The reply button ids of a confirmation (the contract's names).
const (
	ButtonYes = "confirm_yes"
	ButtonNo  = "confirm_no"
)

// Meta's limits on what a turn sends.
const (
	// MaxTextLen is a text message body's limit.
	MaxTextLen = 4096
	// MaxButtonBodyLen is an interactive message body's limit.
	MaxButtonBodyLen = 1024
	// MaxButtonTitleLen is a reply button title's limit.
	MaxButtonTitleLen = 20
)

// Reply is one message a turn sends. The worker sends it with responder.Reply's rules (Text,
// or Message with the recipient filled in) under its own idempotency record.
type Reply struct {
	responder.Reply
	// Index is the reply's position in the turn, from 0: the worker derives each reply's
	// idempotency key from the inbound message id and Index, so a redone turn sends none twice.
	Index int
	// Key is the system message the reply is, empty for the model's own text: the store marks
	// i18n.QuotaExceeded replies quota_exceeded.
	Key i18n.Key
}

// Body is the reply's text: a text reply's, or an interactive message's body.
func (r Reply) Body() string {
	if m := r.Message; m != nil && m.Interactive != nil && m.Interactive.Body != nil {
		return m.Interactive.Body.Text
	}
	return r.Text
}

// replies builds a turn's reply list, numbering it.
type replies []Reply

func (rs *replies) text(text string, key i18n.Key, quote bool) {
	*rs = append(*rs, Reply{Reply: responder.Reply{Text: clip(text, MaxTextLen), Quote: quote}, Index: len(*rs), Key: key})
}

func (rs *replies) system(lang string, key i18n.Key) { rs.text(i18n.Text(lang, key), key, false) }

// confirm adds the confirmation: body with the confirm_yes and confirm_no buttons. A body
// longer than an interactive message allows goes first as text, and the buttons follow under
// the localized "shall I go ahead?".
func (rs *replies) confirm(lang, body string) {
	if strings.TrimSpace(body) == "" {
		body = i18n.Text(lang, i18n.ConfirmPrompt)
	}
	if utf8.RuneCountInString(body) > MaxButtonBodyLen {
		rs.text(body, "", false)
		body = i18n.Text(lang, i18n.ConfirmPrompt)
	}
	msg := &graph.Message{Type: "interactive", Interactive: &graph.Interactive{
		Type: "button",
		Body: &graph.Body{Text: body},
		Action: graph.Action{Buttons: []graph.ActionButton{
			{Type: "reply", Reply: graph.ButtonReply{ID: ButtonYes, Title: clip(i18n.Text(lang, i18n.ButtonConfirm), MaxButtonTitleLen)}},
			{Type: "reply", Reply: graph.ButtonReply{ID: ButtonNo, Title: clip(i18n.Text(lang, i18n.ButtonCancel), MaxButtonTitleLen)}},
		}},
	}}
	*rs = append(*rs, Reply{Reply: responder.Reply{Message: msg}, Index: len(*rs)})
}

// transcript is what the turn sent, for the turn's record.
func (rs replies) transcript() string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.Body())
	}
	return strings.Join(parts, "\n\n")
}

// clip cuts s to at most n characters (runes), ending a cut text with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
