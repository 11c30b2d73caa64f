package inbox

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestTimelineOrder: a conversation reads in Meta's time and, within a second, in the order
// wapipe had the messages: an action's "Done" stored in the same second as the "yes" that caused
// it comes after it, and a turn's replies follow their message.
func TestTimelineOrder(t *testing.T) {
	t.Parallel()
	sec := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	in := func(id, text string, ts time.Time, received time.Time, replies ...string) store.Message {
		m := store.Message{Direction: store.DirectionIn, MessageID: id, Type: "text", Text: text, Timestamp: ts.Unix(), ReceivedAt: received}
		for i, r := range replies {
			m.Replies = append(m.Replies, store.Reply{Index: i, IdempotencyKey: id + "-r", Body: r})
		}
		return m
	}
	out := func(id, text string, arrived time.Time) store.Message {
		return store.Message{Direction: store.DirectionOut, MessageID: id, Type: "text", Text: text, Timestamp: arrived.Unix(), ArrivedAt: arrived}
	}
	cases := []struct {
		name string
		msgs []store.Message
		want []string
	}{
		{"action result in the same second as the confirmation",
			[]store.Message{out("act-r", "Done", sec.Add(900*time.Millisecond)), in("w2", "yes", sec, sec.Add(300*time.Millisecond)),
				in("w1", "book bus 01", sec.Add(-5*time.Second), sec.Add(-5*time.Second), "Correct?")},
			[]string{"book bus 01", "Correct?", "yes", "Done"}},
		{"two messages of one second in the webhook's order",
			[]store.Message{in("b", "second", sec, sec.Add(200*time.Millisecond)), in("a", "first", sec, sec.Add(100*time.Millisecond))},
			[]string{"first", "second"}},
		{"an operator reply between two inbound messages",
			[]store.Message{in("b", "thanks", sec.Add(2*time.Second), sec.Add(2*time.Second)), out("console-1", "On it", sec.Add(time.Second)),
				in("a", "help", sec, sec)},
			[]string{"help", "On it", "thanks"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, it := range timeline(tc.msgs) {
				got = append(got, it.Text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want, +got):\n%s", diff)
			}
		})
	}
}

// TestAuthors: the operator's reply is the operator's, the assistant's replies the assistant's.
func TestAuthors(t *testing.T) {
	t.Parallel()
	items := timeline([]store.Message{
		{Direction: store.DirectionIn, MessageID: "w1", Text: "hi", Timestamp: 10, Replies: []store.Reply{{IdempotencyKey: "k", Body: "Hello!"}}},
		{Direction: store.DirectionOut, MessageID: "console-1", Text: "An operator here", Timestamp: 20, Event: OperatorReplyEvent, Operator: "ana@example.com"},
		{Direction: store.DirectionOut, MessageID: "console-0", Text: "older reply", Timestamp: 15, Event: OperatorReplyEvent},
		{Direction: store.DirectionOut, MessageID: "act-1", Text: "Done", Timestamp: 30, ActionID: "act_1", Event: "action_done"},
	})
	var got []string
	for _, it := range items {
		got = append(got, it.AuthorKind+"|"+it.Author)
	}
	want := []string{"contact|", "assistant|Assistant", "operator|Operator", "operator|Operator ana@example.com", "action|Assistant · action result"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("authors (-want, +got):\n%s", diff)
	}
}

// TestLabelEvents: a request that asked to confirm says what became of it, never "pending" once
// confirmed.
func TestLabelEvents(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	msg := func(id, event string) messageView {
		return messageView{Direction: store.DirectionIn, messageID: id, RawEvent: event}
	}
	cases := []struct {
		name    string
		items   []messageView
		pending *turnstate.PendingAction
		want    []string
	}{
		{"confirmed", []messageView{msg("a", "pending"), msg("b", "confirmed")}, nil,
			[]string{"asked to confirm · confirmed", "confirmed the action"}},
		{"cancelled", []messageView{msg("a", "pending"), msg("b", "cancelled")}, nil,
			[]string{"asked to confirm · cancelled", "cancelled the action"}},
		{"awaiting", []messageView{msg("a", "pending")}, &turnstate.PendingAction{MessageID: "a", ExpiresAt: now.Add(time.Minute)},
			[]string{"asked to confirm · awaiting confirmation"}},
		{"expired", []messageView{msg("a", "pending")}, &turnstate.PendingAction{MessageID: "a", ExpiresAt: now.Add(-time.Minute)},
			[]string{"asked to confirm · expired"}},
		{"replaced by a correction", []messageView{msg("a", "pending"), msg("b", "pending")},
			&turnstate.PendingAction{MessageID: "b", ExpiresAt: now.Add(time.Minute)},
			[]string{"asked to confirm · not confirmed (replaced)", "asked to confirm · awaiting confirmation"}},
		{"other events for people", []messageView{msg("a", "general_query"), msg("b", "some_new_event")}, nil,
			[]string{"answered", "some new event"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			labelEvents(tc.items, tc.pending, now)
			var got []string
			for _, it := range tc.items {
				got = append(got, it.Event)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	in := func(ts int64, text, event string, replies ...string) store.Message {
		m := store.Message{Direction: store.DirectionIn, MessageID: text, Type: "text", Text: text, Timestamp: ts, Event: event}
		for _, r := range replies {
			m.Replies = append(m.Replies, store.Reply{IdempotencyKey: "k" + text, Body: r})
		}
		return m
	}
	cases := []struct {
		name string
		msgs []store.Message
		want summary
	}{
		{"empty", nil, summary{}},
		{"answered by the assistant", []store.Message{in(1, "hi", "ack", "Thanks, we got your message.")},
			summary{Preview: "Thanks, we got your message.", PreviewOut: true}},
		{"two unanswered", []store.Message{in(1, "hi", "ack", "Thanks"), in(2, "are you there", ""), in(3, "hello?\nanyone", "")},
			summary{Preview: "hello?", Unread: 2, NeedsReply: true}},
		{"a reaction needs no reply", []store.Message{in(1, "hi", "ack", "Thanks"), in(2, "👍", "ignored")},
			summary{Preview: "👍"}},
		{"a full window", []store.Message{in(1, "a", ""), in(2, "b", ""), in(3, "c", ""), in(4, "d", ""), in(5, "e", "")},
			summary{Preview: "e", Unread: 5, UnreadMore: true, NeedsReply: true}},
		{"media without text", []store.Message{{Direction: store.DirectionIn, Type: "document", Timestamp: 1,
			Media: &store.Media{MIMEType: "application/pdf", Size: 1200, Filename: "invoice.pdf"}}},
			summary{Preview: "invoice.pdf", Unread: 1, NeedsReply: true}},
		{"long text is cut", []store.Message{in(1, strings.Repeat("word ", 40), "")},
			summary{Preview: strings.TrimSpace(strings.Repeat("word ", 16)) + "…", Unread: 1, NeedsReply: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, summarize(tc.msgs)); diff != "" {
				t.Errorf("summary (-want, +got):\n%s", diff)
			}
		})
	}
}
