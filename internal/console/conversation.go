package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/store"
)

// OutboundReader reads the outbound records of replies (their delivery state); *store.Outbound
// implements it.
type OutboundReader interface {
	GetOutbounds(ctx context.Context, keys []string) (map[string]store.OutboundRecord, error)
}

// Replier sends an operator's text reply to a conversation's contact through the send path of
// POST /v1/messages, with its rules: the tenant's auth status, the 24 h customer service window
// (free-form text outside it is refused), the tenant's send queue. IdempotencyKey is the same for
// a double submit, so the send path sends once even if the console asked twice. Errors that
// implement UserMessage() string are shown to the operator as they say.
type Replier interface {
	Reply(ctx context.Context, r ReplyRequest) (ReplyResult, error)
}

// ReplyRequest is one operator reply.
type ReplyRequest struct {
	TenantID       string
	PhoneNumberID  string
	ConversationID string
	// To is the contact's wa_id.
	To   string
	Text string
	// IdempotencyKey is "console-" + the form's request id.
	IdempotencyKey string
	// Operator is who sent it, for the record.
	Operator string
}

// ReplyResult is what the send path said: the message's id and status (queued…).
type ReplyResult struct {
	ID     string
	Status string
}

// MaxReplyRunes is the longest reply: a WhatsApp text body holds 4096 characters.
const MaxReplyRunes = 4096

// MessagesShown is how many of a conversation's messages its page shows: the latest ones.
const MessagesShown = 200

type conversationView struct {
	C        store.Conversation
	Contact  string
	Messages []messageView
	Pending  *pendingView
	Actions  []actionView
}

type messageView struct {
	Direction string
	At        time.Time
	Type      string
	Text      string
	// Tick is the delivery state of an outgoing message.
	Tick  tick
	Event string
}

type tick struct {
	Symbol, Label string
}

type pendingView struct {
	Intent    string
	Summary   string
	Data      string
	ExpiresAt time.Time
	Expired   bool
}

type actionView struct {
	ActionID string
	Intent   string
	At       time.Time
	Done     bool
	// State is the actions record's (calling, waiting, done, refused, failed), empty before
	// its task ran; HTTPStatus and Reply the business's answer.
	State      string
	HTTPStatus int64
	Reply      string
	Attempts   int64
}

// ActionReader reads a conversation's actions; *store.ActionStore implements it.
type ActionReader interface {
	ByConversation(ctx context.Context, conversationID string, limit int) ([]store.ActionRecord, error)
}

// tickOf turns an outbound record into the ticks WhatsApp users know.
func tickOf(rec store.OutboundRecord, ok bool) tick {
	if !ok {
		return tick{"…", "not sent yet"}
	}
	switch {
	case rec.DeliveryStatus == store.DeliveryRead:
		return tick{"✓✓", "read"}
	case rec.DeliveryStatus == store.DeliveryDelivered:
		return tick{"✓✓", "delivered"}
	case rec.DeliveryStatus == store.DeliveryFailed:
		return tick{"✗", fmt.Sprintf("delivery failed (code %d)", rec.DeliveryError)}
	case rec.State == store.OutboundSent:
		return tick{"✓", "sent"}
	case rec.State == store.OutboundFailed:
		return tick{"✗", fmt.Sprintf("send failed (code %d)", rec.LastErrorCode)}
	case rec.State == store.OutboundSkipped:
		return tick{"–", "skipped"}
	default:
		return tick{"🕓", rec.State}
	}
}

func (s *Server) conversationView(ctx context.Context, id string) (conversationView, error) {
	c, err := s.deps.Conversations.Get(ctx, id)
	if err != nil {
		return conversationView{}, err
	}
	msgs, err := s.deps.Conversations.LatestMessages(ctx, id, MessagesShown)
	if err != nil {
		return conversationView{}, err
	}
	var keys []string
	for _, m := range msgs {
		if m.Direction == store.DirectionOut {
			keys = append(keys, m.MessageID)
		}
		for _, rep := range m.Replies {
			keys = append(keys, rep.IdempotencyKey)
		}
	}
	recs, err := s.deps.Outbound.GetOutbounds(ctx, keys)
	if err != nil {
		return conversationView{}, err
	}
	runs := map[string]store.ActionRecord{}
	if s.deps.Actions != nil {
		recs, err := s.deps.Actions.ByConversation(ctx, id, 100)
		if err != nil {
			return conversationView{}, err
		}
		for _, r := range recs {
			runs[r.ActionID] = r
		}
	}
	v := conversationView{C: c, Contact: contactLabel(c.ContactName, c.Contact)}
	for _, m := range msgs {
		at := m.ReceivedAt
		if m.Timestamp > 0 {
			at = time.Unix(m.Timestamp, 0)
		}
		if m.Direction == store.DirectionOut {
			rec, ok := recs[m.MessageID]
			v.Messages = append(v.Messages, messageView{Direction: store.DirectionOut, At: at, Type: m.Type, Text: m.Text, Tick: tickOf(rec, ok)})
			continue
		}
		v.Messages = append(v.Messages, messageView{Direction: store.DirectionIn, At: at, Type: m.Type, Text: m.Text, Event: m.Event})
		for _, rep := range m.Replies {
			rec, ok := recs[rep.IdempotencyKey]
			at := m.CommittedAt
			if ok && !rec.SentAt.IsZero() {
				at = rec.SentAt
			}
			v.Messages = append(v.Messages, messageView{Direction: store.DirectionOut, At: at, Type: "text", Text: rep.Body, Tick: tickOf(rec, ok)})
		}
		if m.ActionID != "" {
			a := actionView{ActionID: m.ActionID, At: m.CommittedAt, Done: !m.EffectsDoneAt.IsZero()}
			if r, ok := runs[m.ActionID]; ok {
				a.State, a.HTTPStatus, a.Reply, a.Attempts = r.State, r.HTTPStatus, r.Reply, r.Attempts
			}
			var req assistant.ActionRequest
			if json.Unmarshal([]byte(m.Action), &req) == nil {
				a.Intent = req.Intent
			}
			v.Actions = append(v.Actions, a)
		}
	}
	if p := c.State.Pending; p != nil {
		data, _ := json.Marshal(p.Data)
		v.Pending = &pendingView{Intent: p.Intent, Summary: p.Summary, Data: string(data), ExpiresAt: p.ExpiresAt, Expired: p.Expired(s.deps.Now())}
	}
	return v, nil
}

func (s *Server) handleConversation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.conversationView(r.Context(), chi.URLParam(r, "conversation"))
		if err != nil {
			s.fail(w, r, "Read the conversation", err)
			return
		}
		s.render(w, r, http.StatusOK, "conversation", "", view{Title: "Conversation with " + v.Contact, Nav: "tenants",
			Flash: s.flash(r), Data: v})
	})
}

// conversationAction reads the conversation an action is about and performs the action built
// from it.
func (s *Server) conversationAction(build func(r *http.Request, c store.Conversation) (action, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.deps.Conversations.Get(r.Context(), chi.URLParam(r, "conversation"))
		if err != nil {
			s.fail(w, r, "Read the conversation", err)
			return
		}
		a, err := build(r, c)
		if err != nil {
			s.renderError(w, r, http.StatusBadRequest, userMessage(err))
			return
		}
		a.tenantID, a.target, a.back = c.TenantID, c.ID, "/conversations/"+c.ID
		s.perform(w, r, a)
	})
}

// formError is a problem with what the operator typed, shown as it is.
type formError string

func (e formError) Error() string       { return string(e) }
func (e formError) UserMessage() string { return string(e) }

func (s *Server) handleReply() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (action, error) {
		text := strings.TrimSpace(r.PostForm.Get("text"))
		switch {
		case text == "":
			return action{}, formError("The reply is empty.")
		case utf8.RuneCountInString(text) > MaxReplyRunes:
			return action{}, formError(fmt.Sprintf("The reply is longer than %d characters.", MaxReplyRunes))
		}
		id := r.PostForm.Get(RequestIDField)
		return action{name: "reply", run: func(ctx context.Context) (string, error) {
			res, err := s.deps.Replier.Reply(ctx, ReplyRequest{TenantID: c.TenantID, PhoneNumberID: c.PhoneNumberID,
				ConversationID: c.ID, To: c.Contact, Text: text, IdempotencyKey: "console-" + id, Operator: OperatorFrom(ctx)})
			if err != nil {
				return "", err
			}
			return strings.TrimSpace("message " + res.ID + " " + res.Status), nil
		}}, nil
	})
}

func (s *Server) handleAssign() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (action, error) {
		return action{name: "assign", run: func(ctx context.Context) (string, error) {
			op := OperatorFrom(ctx)
			if err := s.deps.Conversations.AssignConversation(ctx, c.ID, op); err != nil {
				return "", err
			}
			return "assigned to " + op, nil
		}}, nil
	})
}

func (s *Server) handleClose() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (action, error) {
		return action{name: "close", run: func(ctx context.Context) (string, error) {
			if err := s.deps.Conversations.CloseConversation(ctx, c.ID); err != nil {
				return "", err
			}
			return "closed", nil
		}}, nil
	})
}
