package turn

import (
	"context"
	"fmt"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/events"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/people"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Engine decides one turn of a conversation; *assistant.Engine implements it.
type Engine interface {
	Turn(ctx context.Context, in assistant.Input) (assistant.Outcome, error)
}

// Events applies what a message does to the stored records before it is answered (a revoke, an
// edit, a number change); *events.Applier implements it.
type Events interface {
	ApplyMessage(ctx context.Context, tenantID, conversationID string, m whatsapp.Message) (events.Outcome, error)
}

// Tenants gives a tenant by id, as of a few seconds ago at most; the worker's tenant cache
// implements it. An unknown id is store.ErrNotFound.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// People says who a message is from (their contact and conversation) and follows identity
// changes; *people.Directory implements it.
type People interface {
	Sender(ctx context.Context, tenantID, phoneNumberID string, id contact.Identity) (people.Sender, error)
	Change(ctx context.Context, tenantIDs []string, ch whatsapp.IdentityChange) ([]people.Moved, error)
}

// Messages reads a conversation's stored messages (the one whose reply asked for the
// confirmation a tap answers); *store.ConversationStore implements it.
type Messages interface {
	GetMessage(ctx context.Context, conversationID, messageID string) (store.Message, error)
}

// Records reads a send's outbound record (the Graph id of a prompt sent after its turn's effects
// were done with it); *store.Outbound implements it.
type Records interface {
	GetOutbound(ctx context.Context, key string) (store.OutboundRecord, error)
}

// Tokens opens a tenant's access token, for the files a turn fetches and the read receipt;
// *delivery.Deliverer implements it.
type Tokens interface {
	TenantToken(ctx context.Context, tenantID string) (rec store.TenantRecord, token, reason string, err error)
}

// Receipts marks an inbound message read, best effort; *delivery.Deliverer implements it.
type Receipts interface {
	MarkRead(ctx context.Context, token, phoneNumberID, messageID string) bool
	ShowTyping(ctx context.Context, token, phoneNumberID, messageID string) bool
}

// Turner runs tenants' messages through their conversations (see the package comment). Runner,
// People, Tenants, Messages, Assistant, Tokens and Receipts are required.
type Turner struct {
	Runner   *conversation.Runner
	People   People
	Tenants  Tenants
	Messages Messages
	// Events applies a message's events before its turn; nil: every message is answered.
	Events Events
	// Gate is the tenants' membership: onboarding and invite codes, before the assistant.
	Gate members.Gate
	// Records reads the records of sent prompts; nil: a prompt whose Graph id its turn's effects
	// did not record is not known to have been sent.
	Records   Records
	Assistant Engine
	// Media makes the loaders of the files the assistant reads; nil: no file is fetched (the
	// assistant answers that it cannot read the message).
	Media    media.LoaderMaker
	Tokens   Tokens
	Receipts Receipts
}

// Result says what Handle did.
type Result struct {
	conversation.Result
	// ContactID is the sender's contact, "" when Handle stopped before it was found.
	ContactID string
	// Followed: the message was an identity change, followed (package people) and not answered.
	Followed bool
}

// Handle answers a tenant's message through its conversation: the message is stored in the
// conversation's inbox and its turn runs when the conversation's earlier turns have run (see
// package conversation), here or in the task that holds the conversation. in is the message as
// its task brings it, with Person the sender as the task names them: Handle finds their contact
// and conversation and fills in the rest. On in.LastAttempt a message queued behind another
// holder waits for it (conversation.Runner.AwaitHolder). Acknowledge the task only when Handle
// returns nil: conversation.ErrHeld says a holder (perhaps dead) has the message, media.ErrBusy
// that its turn could not get its file's share of the media budget and waits in the inbox.
func (t *Turner) Handle(ctx context.Context, in conversation.Inbound) (Result, error) {
	if ch, ok := in.Message.IdentityChange(); ok {
		// process_inbound follows identity changes and makes no task of them; a task made
		// before it did lands here. It is followed the same way, never answered, and makes no
		// contact nor conversation for a person the tenant never knew.
		if _, err := t.People.Change(ctx, []string{in.TenantID}, ch); err != nil {
			return Result{}, fmt.Errorf("follow the identity change: %w", err)
		}
		return Result{Followed: true}, nil
	}
	who, err := t.People.Sender(ctx, in.TenantID, in.PhoneNumberID, in.Person)
	if err != nil {
		return Result{}, fmt.Errorf("find the sender's contact: %w", err)
	}
	ctx, _ = logging.With(ctx, "contact_id", who.Contact.ID)
	res := Result{ContactID: who.Contact.ID}
	in.ConversationID, in.ContactID, in.Person, in.Contact = who.ConversationID, who.Contact.ID, who.Contact.Identity, who.Contact.WaID
	if rec, err := t.Tenants.Tenant(ctx, in.TenantID); err == nil && rec.Tenant.Assistant.Mode == tenant.ModeLLM {
		in.MayConfirm = true
	}
	readDone := t.markReadAsync(ctx, in)
	handle := t.Runner.Handle
	if in.LastAttempt {
		handle = t.Runner.AwaitHolder
	}
	res.Result, err = handle(ctx, in, t.turnFunc(in.LastAttempt))
	<-readDone
	return res, err
}

// markReadAsync marks the inbound message read with its tenant's token, beside the turn; the
// returned channel closes when it is done. Best effort: no token, no mark.
func (t *Turner) markReadAsync(ctx context.Context, in conversation.Inbound) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec, token, _, err := t.Tokens.TenantToken(ctx, in.TenantID)
		if err != nil || rec.AuthStatus == store.AuthNeedsReauth {
			// No token, or one already refused: nothing to mark with.
			return
		}
		t.Receipts.MarkRead(context.WithoutCancel(ctx), token, in.PhoneNumberID, in.Message.ID)
	}()
	return done
}
