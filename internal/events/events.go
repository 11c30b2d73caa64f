package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// conversationStore is what the events change in the stored conversations.
type conversationStore interface {
	EraseMessage(ctx context.Context, conversationID, messageID string) (bool, error)
	EditMessage(ctx context.Context, conversationID, messageID, text string) (bool, error)
	AddBusinessMessage(ctx context.Context, conversationID string, m store.Message, history bool) error
}

// tenantStore is what the events change on the tenants.
type tenantStore interface {
	RecordAccountUpdate(ctx context.Context, wabaID, event, detail string) ([]string, error)
	TenantsByWABA(ctx context.Context, wabaID string) ([]string, error)
	NumberUse(ctx context.Context, phoneNumberID string) (tenant.NumberUse, error)
}

// preferenceStore records the contacts' preferences and the templates' categories.
type preferenceStore interface {
	SetMarketing(ctx context.Context, tenantID string, c store.Contact, stop bool, metaTime int64) (bool, error)
	RecordTemplate(ctx context.Context, t store.Template) error
}

// People finds who an event is about and follows identity changes; *people.Directory
// implements it.
type People interface {
	Sender(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (people.Sender, error)
	Change(ctx context.Context, tenantIDs []string, ch whatsapp.IdentityChange) ([]people.Moved, error)
}

// Applier applies events to the stores. It is safe for concurrent use.
type Applier struct {
	conversations conversationStore
	tenants       tenantStore
	prefs         preferenceStore
	people        People
}

// New returns an Applier over the conversation store, the tenant store, the preference store
// and the tenants' people (*store.ConversationStore, *store.Tenants, *store.ContactPrefs,
// *people.Directory).
func New(c conversationStore, t tenantStore, p preferenceStore, pp People) *Applier {
	return &Applier{conversations: c, tenants: t, prefs: p, people: pp}
}

// Outcome is what the worker does after an event was applied.
type Outcome struct {
	// Answer: the message is answered like any other (the assistant's turn, which also decides a
	// revoke's or an edit's effect on its state, or the responder's acknowledgement). False: it
	// is recorded and nothing is sent; in a conversation the assistant's turn still runs, to save
	// the state (it sends nothing for these messages).
	Answer bool
	// Reply, when set, is the one system reply to send instead of an answer, in the contact's
	// language (i18n.UnsupportedMessage, "please send it another way").
	Reply i18n.Key
	// Event names what was applied, for the worker's log line.
	Event string
}

// Event names of the Outcome.
const (
	EventMessage               = "message"                         // an ordinary message: nothing applied here
	EventRevoked               = "message_revoked"                 // the stored message erased
	EventEdited                = "message_edited"                  // the stored message changed
	EventNumberChanged         = "contact_moved"                   // an identity change followed (number or BSUID)
	EventSystemNotice          = "system_notice"                   // another system message: recorded
	EventCallPermission        = "call_permission"                 // a call permission answer: recorded
	EventFlowReply             = "flow_reply"                      // a Flow wapipe did not send: recorded
	EventUnsupported           = "unsupported_message"             // "please send it another way"
	EventPreference            = "contact_preference"              // a marketing preference recorded
	EventEcho                  = "message_echo"                    // the business's own message stored
	EventAccountUpdate         = "account_update"                  // an account update recorded
	EventTemplateUpdate        = "template_update"                 // a template's status, category or quality
	EventCall                  = "call_event"                      // a call event, logged only
	EventUnknownField          = "unknown_field"                   // a field wapipe does not handle
	EventPreferenceDefaultPath = "contact_preference_default_path" // not recorded: no tenant
)

// ApplyMessage applies message m of tenant tenantID's conversation conversationID (both empty
// on a path without a stored conversation) and says how it is answered. Its effects are
// idempotent: an error is for the task to retry. Every message but an ordinary one is logged
// (kind and outcome, no content).
func (a *Applier) ApplyMessage(ctx context.Context, tenantID, conversationID string, m whatsapp.Message) (Outcome, error) {
	o, err := a.applyMessage(ctx, tenantID, conversationID, m)
	if err != nil {
		return o, fmt.Errorf("apply the %s message's event: %w", m.Type, err)
	}
	if o.Event != EventMessage {
		logging.FromContext(ctx).InfoContext(ctx, "message event applied", "event", o.Event, "message_type", m.Type,
			"answer", o.Answer, "reply", string(o.Reply))
	}
	return o, nil
}

func (a *Applier) applyMessage(ctx context.Context, tenantID, conversationID string, m whatsapp.Message) (Outcome, error) {
	if ch, ok := m.IdentityChange(); ok {
		// process_inbound follows identity changes and makes no task of them; a task made
		// before it did still lands here.
		if tenantID != "" {
			if _, err := a.people.Change(ctx, []string{tenantID}, ch); err != nil {
				return Outcome{}, err
			}
		}
		return Outcome{Event: EventNumberChanged}, nil
	}
	switch {
	case m.Type == "revoke":
		if _, err := a.conversations.EraseMessage(ctx, conversationID, m.OriginalID); err != nil {
			return Outcome{}, err
		}
		return Outcome{Event: EventRevoked}, nil
	case m.Type == "edit":
		if _, err := a.conversations.EditMessage(ctx, conversationID, m.OriginalID, m.Text); err != nil {
			return Outcome{}, err
		}
		return Outcome{Event: EventEdited}, nil
	case m.Type == "system":
		return Outcome{Event: EventSystemNotice}, nil
	case m.Type == "interactive" && m.Reply != nil && m.Reply.Kind == whatsapp.InteractiveCallPermission:
		return Outcome{Event: EventCallPermission}, nil
	case m.Type == "interactive" && m.Reply != nil && m.Reply.Kind == "nfm_reply":
		return Outcome{Event: EventFlowReply}, nil
	case m.Type == "unsupported":
		return Outcome{Reply: i18n.UnsupportedMessage, Event: EventUnsupported}, nil
	}
	return Outcome{Answer: true, Event: EventMessage}, nil
}

// Apply applies a change of a field other than messages. tenantID is the tenant the change's
// phone number routes to (empty for the single-tenant default or an unrouted number); changes
// about a WhatsApp Business Account (account_update, template updates) find their tenants by
// ev.WABAID. Nothing is ever answered.
func (a *Applier) Apply(ctx context.Context, tenantID string, ev whatsapp.Event) (Outcome, error) {
	logger := logging.FromContext(ctx).With("field", ev.Field, "waba_id", ev.WABAID)
	switch {
	case ev.Preference != nil:
		return a.preference(ctx, logger, tenantID, ev)
	case ev.Echo != nil:
		return a.echo(ctx, logger, tenantID, ev)
	case ev.Account != nil:
		return a.account(ctx, logger, ev)
	case ev.Template != nil:
		return a.template(ctx, logger, ev)
	case ev.Call != nil:
		logger.InfoContext(ctx, "call event recorded (no Calling API support)", "event", EventCall,
			"call_event", ev.Call.Event, "direction", ev.Call.Direction, logging.Phone("contact", ev.Contact.WaID),
			logging.User("contact_user", ev.Contact.UserID))
		return Outcome{Event: EventCall}, nil
	case ev.IdentityChange != nil:
		if tenantID != "" {
			if _, err := a.people.Change(ctx, []string{tenantID}, *ev.IdentityChange); err != nil {
				return Outcome{}, err
			}
		}
		return Outcome{Event: EventNumberChanged}, nil
	}
	logger.InfoContext(ctx, "webhook field not handled", "event", EventUnknownField)
	return Outcome{Event: EventUnknownField}, nil
}

func (a *Applier) preference(ctx context.Context, logger *slog.Logger, tenantID string, ev whatsapp.Event) (Outcome, error) {
	p := ev.Preference
	if p.Category != "marketing_messages" {
		logger.InfoContext(ctx, "preference of another category: not recorded", "event", EventPreference, "category", p.Category)
		return Outcome{Event: EventPreference}, nil
	}
	if tenantID == "" {
		// Preferences serve /v1/messages, which sends for tenants only.
		logger.InfoContext(ctx, "marketing preference on the default path: not recorded", "event", EventPreferenceDefaultPath, "value", p.Value)
		return Outcome{Event: EventPreferenceDefaultPath}, nil
	}
	ts, _ := strconv.ParseInt(p.Timestamp, 10, 64)
	who, err := a.people.Sender(ctx, tenantID, ev.PhoneNumberID, ev.Contact)
	if errors.Is(err, people.ErrNobody) {
		logger.WarnContext(ctx, "marketing preference that names nobody: not recorded", "event", EventPreference, "tenant_id", tenantID)
		return Outcome{Event: EventPreference}, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	changed, err := a.prefs.SetMarketing(ctx, tenantID, who.Contact, p.Stop, ts)
	if err != nil {
		return Outcome{}, err
	}
	logger.InfoContext(ctx, "marketing preference recorded", "event", EventPreference, "tenant_id", tenantID,
		"contact_id", who.Contact.ID, "value", p.Value, "changed", changed)
	return Outcome{Event: EventPreference}, nil
}

func (a *Applier) echo(ctx context.Context, logger *slog.Logger, tenantID string, ev whatsapp.Event) (Outcome, error) {
	e := ev.Echo
	ts, _ := strconv.ParseInt(e.Timestamp, 10, 64)
	m := store.Message{MessageID: e.ID, Type: e.Type, Text: e.Text, Timestamp: ts}
	if e.Media != nil {
		m.Media = &store.Media{ID: e.Media.ID, MIMEType: e.Media.MimeType, SHA256: e.Media.SHA256, Caption: e.Text, Filename: e.Media.Filename}
	}
	if tenantID == "" {
		// The default path keeps no conversation.
		logger.InfoContext(ctx, "business app message on the default path: not stored", "event", EventEcho)
		return Outcome{Event: EventEcho}, nil
	}
	who, err := a.people.Sender(ctx, tenantID, ev.PhoneNumberID, ev.Contact)
	if errors.Is(err, people.ErrNobody) {
		logger.WarnContext(ctx, "business app message to nobody: not stored", "event", EventEcho, "tenant_id", tenantID)
		return Outcome{Event: EventEcho}, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	conv := who.ConversationID
	switch e.Type {
	case "revoke":
		// The business deleted or edited, in the app, a message it had sent.
		_, err = a.conversations.EraseMessage(ctx, conv, e.OriginalID)
	case "edit":
		_, err = a.conversations.EditMessage(ctx, conv, e.OriginalID, e.Text)
	default:
		// On a number several businesses share, what was sent from the Business app is the
		// number's owner's, not necessarily this tenant's: stored for the people who read the
		// conversation, never put in this tenant's model's history as its own words.
		var shared bool
		if shared, err = a.sharedNumber(ctx, ev.PhoneNumberID); err == nil {
			err = a.conversations.AddBusinessMessage(ctx, conv, m, !shared)
		}
	}
	if err != nil {
		return Outcome{}, err
	}
	logger.InfoContext(ctx, "business app message stored in the conversation", "event", EventEcho, "tenant_id", tenantID,
		"conversation_id", conv, "message_type", e.Type)
	return Outcome{Event: EventEcho}, nil
}

// sharedNumber reports whether phoneNumberID is shared by several tenants.
func (a *Applier) sharedNumber(ctx context.Context, phoneNumberID string) (bool, error) {
	u, err := a.tenants.NumberUse(ctx, phoneNumberID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the use of number %s: %w", phoneNumberID, err)
	}
	return u.Shared, nil
}

func (a *Applier) account(ctx context.Context, logger *slog.Logger, ev whatsapp.Event) (Outcome, error) {
	acc := ev.Account
	ids, err := a.tenants.RecordAccountUpdate(ctx, ev.WABAID, acc.Event, acc.Detail)
	if err != nil {
		return Outcome{}, err
	}
	restricts, lifts := store.AccountEffect(acc.Event, acc.Detail)
	args := []any{"event", EventAccountUpdate, "account_event", acc.Event, "detail", acc.Detail, "tenants", ids, "restricts", restricts}
	switch {
	case restricts:
		// The line the alert policy matches: a tenant's messaging stopped.
		logger.ErrorContext(ctx, "WhatsApp Business Account restricted: the tenant's messaging is stopped", args...)
	case lifts:
		logger.WarnContext(ctx, "WhatsApp Business Account restriction lifted", args...)
	default:
		logger.InfoContext(ctx, "WhatsApp Business Account update", args...)
	}
	return Outcome{Event: EventAccountUpdate}, nil
}

func (a *Applier) template(ctx context.Context, logger *slog.Logger, ev whatsapp.Event) (Outcome, error) {
	t := ev.Template
	ids, err := a.tenants.TenantsByWABA(ctx, ev.WABAID)
	if err != nil {
		return Outcome{}, err
	}
	for _, id := range ids {
		rec := store.Template{TenantID: id, Name: t.Name, Language: t.Language, Status: t.Status, Category: t.Category, Quality: t.Quality}
		if err := a.prefs.RecordTemplate(ctx, rec); err != nil {
			return Outcome{}, fmt.Errorf("template update for %s: %w", id, err)
		}
	}
	logger.InfoContext(ctx, "template update recorded", "event", EventTemplateUpdate, "template", t.Name, "language", t.Language,
		"status", t.Status, "category", t.Category, "quality", t.Quality, "tenants", ids)
	return Outcome{Event: EventTemplateUpdate}, nil
}
