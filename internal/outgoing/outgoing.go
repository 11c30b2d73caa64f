// Package outgoing is what wapipe sends a person: a text, or any Graph API message, quoting the
// message it answers or not. Every send carries one (a turn's reply, an action's result, the
// single-tenant default's acknowledgement, a member's notification). It is a leaf so that the
// packages that decide a message (responder, assistant, members, actionrun) and the one that
// sends it (delivery) share it without importing each other.
package outgoing

import "github.com/wapipe/wapipe/internal/graph"

// Message is what to send. The zero Message means nothing to send.
type Message struct {
	// Text is a plain text message.
	Text string
	// Graph, when set, is sent instead of Text: any Graph API message (interactive buttons or
	// lists, templates, media…). The sender fills in the recipient, the quote and the callback
	// data. Its JSON key stays "Message", the name it had when turns first recorded their
	// replies (package conversation stores them as JSON): a reply recorded by an older revision
	// still decodes with its buttons.
	Graph *graph.Message `json:"Message"`
	// Quote makes the message quote the inbound message it answers (Graph API
	// context.message_id).
	Quote bool
}

// IsZero reports whether there is nothing to send.
func (m Message) IsZero() bool { return m.Text == "" && m.Graph == nil }
