package inbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
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
	// To is the contact's phone (wa_id) when it is known; else Recipient is their BSUID (or
	// parent BSUID): contact.Identity.Address, exactly one of them set.
	To        string
	Recipient string
	// Text is the reply, or with RequestContactInfo the text above the button.
	Text string
	// RequestContactInfo makes the reply Meta's request for the contact's phone number: an
	// interactive request_contact_info message, whose button shares the user's contact card.
	RequestContactInfo bool
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
	C store.Conversation
	// Contact is Person's label, the page's title.
	Contact string
	// Person is the contact as the page shows them: name, username, the phone's last digits
	// where it is known, and whether the page offers to ask for it (contacts.go).
	Person person
	// PhoneRequest is the text the form asking for the phone number starts with (when
	// Person.NoPhone).
	PhoneRequest string
	Messages     []messageView
	Pending      *pendingView
	Actions      []actionView
	// Version changes when anything the thread shows changes: the live refresh sends it back
	// and gets 204 (nothing to redraw) while it is the same.
	Version string
	// LiveURL is what the thread's live refresh reads.
	LiveURL string
	// ListFilter is the filter of the list beside it.
	ListFilter string
	// MarketingStopped: the contact asked Meta to stop the tenant's marketing messages
	// (user_preferences); MARKETING templates to it are refused.
	MarketingStopped bool
	// HeldBy is the human who holds the conversation (takeover): the assistant is silent until
	// HeldUntil; empty when the assistant answers.
	HeldBy    string
	HeldUntil time.Time
}

// messageView is one bubble of the thread.
type messageView struct {
	Direction string
	// Author says who wrote it: the contact, the assistant, an operator (with their email), or
	// the business's system through an action.
	Author string
	// AuthorKind is contact, assistant, operator or action: the bubble's style.
	AuthorKind string
	At         time.Time
	Type       string
	Text       string
	Media      *mediaView
	// Tick is the delivery state of an outgoing message.
	Tick tick
	// Event is what the assistant did with an inbound message, for people; RawEvent as stored.
	Event    string
	RawEvent string
	// key orders the thread; recordKey finds an outgoing message's delivery state.
	key       orderKey
	recordKey string
	messageID string
}

// mediaView is what the console shows of a media message; ImageURL, when set, shows an image
// fetched from Graph on demand (media.go), never stored.
type mediaView struct {
	MIMEType, Size, Caption, Filename string
	ImageURL                          string
	media                             *store.Media
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

// PreferenceReader reads a contact's marketing preference; *store.ContactPrefs implements it.
type PreferenceReader interface {
	Preference(ctx context.Context, tenantID string, c store.Contact) (store.ContactPreference, error)
}

// ActionReader reads a conversation's actions; *store.ActionStore implements it.
type ActionReader interface {
	ListByConversation(ctx context.Context, conversationID string, limit int) ([]store.ActionRecord, error)
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

// orderKey orders a conversation's messages: Meta's time (whole seconds), then when wapipe first
// had the message (the webhook's receipt for an inbound one, the store's arrival for one wapipe
// sent outside a turn), then the order of a turn's replies. Meta's seconds alone put an action's
// "Done" above the "yes" that caused it when both fall in the same second.
type orderKey struct {
	ts    int64
	first time.Time
	sub   int
}

func (a orderKey) compare(b orderKey) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	if c := a.first.Compare(b.first); c != 0 {
		return c
	}
	return cmp.Compare(a.sub, b.sub)
}

func messageKey(m store.Message) orderKey {
	first := m.ReceivedAt
	if first.IsZero() {
		first = m.ArrivedAt
	}
	ts := m.Timestamp
	if ts == 0 {
		ts = first.Unix()
	}
	return orderKey{ts: ts, first: first}
}

// timeline turns stored messages into the thread's bubbles, in order: each inbound message is
// followed by the replies its turn sent; a message sent outside a turn (an operator's reply, an
// action's result) is a bubble of its own. Ticks and event labels are filled in by the caller.
func timeline(msgs []store.Message) []messageView {
	sorted := slices.Clone(msgs)
	slices.SortStableFunc(sorted, func(a, b store.Message) int { return messageKey(a).compare(messageKey(b)) })
	var out []messageView
	for _, m := range sorted {
		k := messageKey(m)
		at := time.Unix(k.ts, 0)
		if m.Direction == store.DirectionOut {
			v := messageView{Direction: store.DirectionOut, At: at, Type: m.Type, Text: cleanText(m.Text), Media: mediaOf(m.Media),
				key: k, recordKey: m.MessageID, messageID: m.MessageID, RawEvent: m.Event}
			switch {
			case m.Operator != "" || m.Event == OperatorReplyEvent:
				v.AuthorKind, v.Author = "operator", "Operator"
				if m.Operator != "" {
					v.Author += " " + m.Operator
				}
			case m.ActionID != "":
				v.AuthorKind, v.Author = "action", "Assistant · action result"
			default:
				v.AuthorKind, v.Author = "assistant", "Assistant"
			}
			out = append(out, v)
			continue
		}
		in := messageView{Direction: store.DirectionIn, AuthorKind: "contact", At: at, Type: m.Type,
			Text: cleanText(m.Text), Media: mediaOf(m.Media), RawEvent: m.Event, key: k, messageID: m.MessageID}
		if in.Media != nil && in.Text == in.Media.Caption {
			// A media message's text is its caption (the worker keeps it in both): shown once.
			in.Text = ""
		}
		out = append(out, in)
		for i, rep := range m.Replies {
			sub := k
			sub.sub = i + 1
			out = append(out, messageView{Direction: store.DirectionOut, AuthorKind: "assistant", Author: "Assistant",
				At: m.CommittedAt, Type: "text", Text: cleanText(rep.Body), key: sub, recordKey: rep.IdempotencyKey})
		}
	}
	return out
}

// OperatorReplyEvent marks an operator's reply stored by the console (OutboxReplier).
const OperatorReplyEvent = "operator_reply"

// cleanText trims a message and drops blank lines in a row beyond one, so a bubble has no empty
// space of its own.
func cleanText(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return s
}

func mediaOf(m *store.Media) *mediaView {
	if m == nil {
		return nil
	}
	return &mediaView{MIMEType: m.MIMEType, Size: humanBytes(m.Size), Caption: cleanText(m.Caption), Filename: m.Filename, media: m}
}

// humanBytes writes a size as people read it (MB = 1,000,000 bytes, as Meta's limits say).
func humanBytes(n int64) string {
	switch {
	case n <= 0:
		return "size unknown"
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
}

// eventLabels are the assistant's events as an operator reads them.
var eventLabels = map[string]string{
	"ack": "acknowledged", "ignored": "no reply needed", "confirmed": "confirmed the action",
	"cancelled": "cancelled the action", "expired": "answered too late", "nothing_to_confirm": "nothing to confirm",
	"confirm_by_reply": "a typed answer not replying to the prompt (shared number)",
	"rate_limited":     "over the rate limit", "quota_blocked": "over the LLM quota", "quota_blocked_cached": "over the LLM quota",
	"unsupported_message": "not readable", "not_understood": "not understood", "llm_unavailable": "assistant unavailable",
	"not_allowed": "not allowed for this member", "clarification": "asked for details", "pending": "asked to confirm",
	"action_now": "action started", "general_query": "answered",
}

func eventLabel(e string) string {
	if l, ok := eventLabels[e]; ok {
		return l
	}
	return strings.ReplaceAll(e, "_", " ")
}

// labelEvents writes each inbound message's event for people. A request that asked to confirm
// says what became of it: confirmed, cancelled, expired, still awaiting (the conversation's
// pending action came from it), or dropped (a correction replaced it) — never "pending" once
// the booking is confirmed.
func labelEvents(items []messageView, pending *turnstate.PendingAction, now time.Time) {
	ask := -1
	outcome := map[int]string{}
	for i := range items {
		it := &items[i]
		if it.Direction != store.DirectionIn || it.RawEvent == "" {
			continue
		}
		it.Event = eventLabel(it.RawEvent)
		switch it.RawEvent {
		case "pending":
			ask = i
		case "confirmed", "cancelled", "expired":
			if ask >= 0 {
				outcome[ask] = map[string]string{"confirmed": "confirmed", "cancelled": "cancelled", "expired": "expired"}[it.RawEvent]
				ask = -1
			}
		}
	}
	for i := range items {
		if items[i].RawEvent != "pending" || items[i].Direction != store.DirectionIn {
			continue
		}
		o, ok := outcome[i]
		switch {
		case ok:
		case pending != nil && pending.MessageID == items[i].messageID && pending.Expired(now):
			o = "expired"
		case pending != nil && pending.MessageID == items[i].messageID:
			o = "awaiting confirmation"
		default:
			o = "not confirmed (replaced)"
		}
		items[i].Event = "asked to confirm · " + o
	}
}

// heldBy is who holds conversation c at now (takeover) and until when; "" when the assistant
// answers.
func (s *Server) heldBy(ctx context.Context, c store.Conversation, now time.Time) (string, time.Time) {
	if c.HumanAt.IsZero() {
		return "", time.Time{}
	}
	pause := tenant.DefaultHumanPause
	if s.deps.Tenants != nil {
		if rec, err := s.deps.Tenants.Get(ctx, c.TenantID); err == nil {
			pause = rec.Tenant.Assistant.EffectiveHumanPause()
		}
	}
	if until := c.HumanAt.Add(pause); now.Before(until) {
		return c.HumanBy, until
	}
	return "", time.Time{}
}

func (s *Server) conversationView(ctx context.Context, id string) (conversationView, error) {
	c, err := s.deps.Conversations.Get(ctx, id)
	if err != nil {
		return conversationView{}, err
	}
	msgs, err := s.deps.Conversations.ListLatestMessages(ctx, id, MessagesShown)
	if err != nil {
		return conversationView{}, err
	}
	items := timeline(msgs)
	var keys []string
	for _, it := range items {
		if it.recordKey != "" {
			keys = append(keys, it.recordKey)
		}
	}
	recs, err := s.deps.Outbound.GetOutbounds(ctx, keys)
	if err != nil {
		return conversationView{}, err
	}
	for i := range items {
		if m := items[i].Media; m != nil {
			m.ImageURL = s.imageURL(c, m.media)
		}
		if items[i].Direction == store.DirectionOut {
			rec, ok := recs[items[i].recordKey]
			items[i].Tick = tickOf(rec, ok)
			// A turn's reply is shown at its send time once it has one.
			if items[i].messageID == "" && ok && !rec.SentAt.IsZero() {
				items[i].At = rec.SentAt
			}
		}
	}
	now := s.deps.Now()
	labelEvents(items, c.State.Pending, now)
	runs := map[string]store.ActionRecord{}
	if s.deps.Actions != nil {
		recs, err := s.deps.Actions.ListByConversation(ctx, id, 100)
		if err != nil {
			return conversationView{}, err
		}
		for _, r := range recs {
			runs[r.ActionID] = r
		}
	}
	ct := s.contactOf(ctx, c)
	pv := personOf(ct.Identity)
	v := conversationView{C: c, Contact: pv.Label, Person: pv, Messages: items}
	v.HeldBy, v.HeldUntil = s.heldBy(ctx, c, now)
	if pv.NoPhone {
		v.PhoneRequest = DefaultPhoneRequest
	}
	if s.deps.Preferences != nil {
		p, err := s.deps.Preferences.Preference(ctx, c.TenantID, ct)
		if err != nil {
			return conversationView{}, err
		}
		v.MarketingStopped = p.MarketingStopped
	}
	for _, m := range msgs {
		if m.ActionID == "" || m.Direction != store.DirectionIn {
			continue
		}
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
	if p := c.State.Pending; p != nil {
		data, _ := json.Marshal(p.Data)
		v.Pending = &pendingView{Intent: p.Intent, Summary: p.Summary, Data: string(data), ExpiresAt: p.ExpiresAt, Expired: p.Expired(now)}
	}
	v.Version = threadVersion(v)
	return v, nil
}

// threadVersion digests what the thread shows.
func threadVersion(v conversationView) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%s|%v|%v|%t", v.C.Status, v.C.AssignedTo, v.Contact, v.Pending, v.Actions, v.MarketingStopped)
	for _, m := range v.Messages {
		fmt.Fprintf(h, "|%s|%s|%s|%s|%v|%s|%d", m.Direction, m.Author, m.Text, m.Event, m.Media, m.Tick.Label, m.At.Unix())
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// handleConversation shows the split view: the conversation's tenant's inbox on the left, the
// conversation on the right.
func (s *Server) handleConversation() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		v, err := s.conversationView(ctx, chi.URLParam(r, "conversation"))
		if err != nil {
			s.kit.Fail(w, r, "Read the conversation", err)
			return
		}
		list, err := s.listBeside(ctx, v.C, r.URL.Query())
		if err != nil {
			s.kit.Fail(w, r, "List the conversations", err)
			return
		}
		v.ListFilter = list.Filter
		v.LiveURL = "/conversations/" + url.PathEscape(v.C.ID) + "/live?" + url.Values{"v": {v.Version}}.Encode()
		s.kit.Render(w, r, http.StatusOK, "inbox", "", page.View{Title: "Conversation with " + v.Contact, Nav: "tenants",
			Flash: s.kit.Flash(r), Data: splitView{List: list, Conv: &v}})
	})
}

// listBeside is the list shown beside conversation c: its tenant's, under the same filter. A
// conversation outlives a tenant removed since, so one whose tenant is gone is still shown, beside
// the conversations stored under its tenant id.
func (s *Server) listBeside(ctx context.Context, c store.Conversation, q url.Values) (inboxView, error) {
	rec, err := s.deps.Tenants.Get(ctx, c.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		rec, err = store.TenantRecord{Tenant: &tenant.Tenant{ID: c.TenantID, Name: c.TenantID + " (no such tenant now)"}}, nil
	}
	if err != nil {
		return inboxView{}, err
	}
	return s.inboxList(ctx, rec, q, c.ID)
}

// handleConversationLive is the thread fragment the open conversation polls: 204 (htmx keeps
// the page as it is) while nothing changed since the version the page has.
func (s *Server) handleConversationLive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.conversationView(r.Context(), chi.URLParam(r, "conversation"))
		if err != nil {
			s.kit.Fail(w, r, "Read the conversation", err)
			return
		}
		if r.URL.Query().Get("v") == v.Version {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		v.LiveURL = "/conversations/" + url.PathEscape(v.C.ID) + "/live?" + url.Values{"v": {v.Version}}.Encode()
		s.kit.Render(w, r, http.StatusOK, "inbox", "thread-live", page.View{Data: v})
	})
}

// conversationAction reads the conversation an action is about and performs the action built
// from it.
func (s *Server) conversationAction(build func(r *http.Request, c store.Conversation) (page.Action, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.deps.Conversations.Get(r.Context(), chi.URLParam(r, "conversation"))
		if err != nil {
			s.kit.Fail(w, r, "Read the conversation", err)
			return
		}
		a, err := build(r, c)
		if err != nil {
			s.kit.RenderError(w, r, http.StatusBadRequest, page.UserMessage(err))
			return
		}
		a.TenantID, a.Target, a.Back = c.TenantID, c.ID, "/conversations/"+url.PathEscape(c.ID)
		s.kit.Perform(w, r, a)
	})
}

// formError is a problem with what the operator typed, shown as it is.
type formError string

func (e formError) Error() string       { return string(e) }
func (e formError) UserMessage() string { return string(e) }

func (s *Server) handleReply() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (page.Action, error) {
		text := strings.TrimSpace(r.PostForm.Get("text"))
		switch {
		case text == "":
			return page.Action{}, formError("The reply is empty.")
		case utf8.RuneCountInString(text) > MaxReplyRunes:
			return page.Action{}, formError(fmt.Sprintf("The reply is longer than %d characters.", MaxReplyRunes))
		}
		addr := s.contactOf(r.Context(), c).Address()
		if addr.IsZero() {
			return page.Action{}, formError("This conversation names no phone number or WhatsApp user id to answer.")
		}
		id := r.PostForm.Get(page.RequestIDField)
		return page.Action{Name: "reply", Run: func(ctx context.Context) (string, error) {
			res, err := s.deps.Replier.Reply(ctx, ReplyRequest{TenantID: c.TenantID, PhoneNumberID: c.PhoneNumberID,
				ConversationID: c.ID, To: addr.To, Recipient: addr.Recipient, Text: text, IdempotencyKey: "console-" + id,
				Operator: page.OperatorFrom(ctx)})
			if err != nil {
				return "", err
			}
			// A human answered: the assistant stays silent here (takeover) until the pause ends
			// or the conversation is handed back.
			if err := s.deps.Conversations.TakeOver(ctx, c.ID, page.OperatorFrom(ctx), s.deps.Now()); err != nil {
				return "", err
			}
			return strings.TrimSpace("message " + res.ID + " " + res.Status), nil
		}}, nil
	})
}

// DefaultPhoneRequest is the text above the button of the request for a contact's phone number,
// until the operator writes another.
const DefaultPhoneRequest = "Could you share your phone number with us? Tap the button below."

// MaxPhoneRequestRunes is the longest text above that button: an interactive message's body
// holds 1024 characters.
const MaxPhoneRequestRunes = 1024

// handleRequestPhone asks a contact known by BSUID alone for their phone number (Meta's
// REQUEST_CONTACT_INFO button), through the operator's reply path: the tenant's rules, its send
// queue, the 24 h window. Their answer is a contacts message carrying the number. A member the
// tenant file lists by phone who wrote by BSUID alone is a stranger until then (CONTRACT.md,
// Wave 4). A contact whose phone is known is not asked.
func (s *Server) handleRequestPhone() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (page.Action, error) {
		ct := s.contactOf(r.Context(), c)
		addr := ct.Address()
		switch {
		case ct.WaID != "":
			return page.Action{}, formError("This contact's phone number is known already.")
		case addr.IsZero():
			return page.Action{}, formError("This conversation names no WhatsApp user id to ask.")
		}
		text := strings.TrimSpace(r.PostForm.Get("text"))
		switch {
		case text == "":
			text = DefaultPhoneRequest
		case utf8.RuneCountInString(text) > MaxPhoneRequestRunes:
			return page.Action{}, formError(fmt.Sprintf("The text is longer than %d characters.", MaxPhoneRequestRunes))
		}
		id := r.PostForm.Get(page.RequestIDField)
		return page.Action{Name: "request_phone", Run: func(ctx context.Context) (string, error) {
			res, err := s.deps.Replier.Reply(ctx, ReplyRequest{TenantID: c.TenantID, PhoneNumberID: c.PhoneNumberID,
				ConversationID: c.ID, Recipient: addr.Recipient, Text: text, RequestContactInfo: true,
				IdempotencyKey: "console-" + id, Operator: page.OperatorFrom(ctx)})
			if err != nil {
				return "", err
			}
			return strings.TrimSpace("phone number request " + res.ID + " " + res.Status), nil
		}}, nil
	})
}

func (s *Server) handleAssign() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (page.Action, error) {
		return page.Action{Name: "assign", Run: func(ctx context.Context) (string, error) {
			op := page.OperatorFrom(ctx)
			if err := s.deps.Conversations.AssignConversation(ctx, c.ID, op); err != nil {
				return "", err
			}
			return "assigned to " + op, nil
		}}, nil
	})
}

// handleHandBack gives the conversation back to the assistant at once.
func (s *Server) handleHandBack() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (page.Action, error) {
		return page.Action{Name: "hand_back", Run: func(ctx context.Context) (string, error) {
			if err := s.deps.Conversations.HandBack(ctx, c.ID, page.OperatorFrom(ctx)); err != nil {
				return "", err
			}
			return "handed back to the assistant", nil
		}}, nil
	})
}

func (s *Server) handleClose() http.Handler {
	return s.conversationAction(func(r *http.Request, c store.Conversation) (page.Action, error) {
		return page.Action{Name: "close", Run: func(ctx context.Context) (string, error) {
			if err := s.deps.Conversations.CloseConversation(ctx, c.ID); err != nil {
				return "", err
			}
			return "closed", nil
		}}, nil
	})
}
