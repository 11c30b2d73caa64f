package delivery

// Kind is what a send is for; it chooses the send's Policy.
type Kind int

// The kinds of send.
const (
	// DefaultReply is process_outbound's reply for the single-tenant default.
	DefaultReply Kind = iota + 1
	// ConversationReply is a reply of a committed conversation turn.
	ConversationReply
	// ActionResult tells the user an action's answer.
	ActionResult
	// APISend is a message sent through POST /v1/messages (process_send).
	APISend
	// ConsoleReply is an operator's reply from the console (process_send).
	ConsoleReply
	// ParkedRelease is a parked conversation reply released by a new token (process_send).
	ParkedRelease
	// Notification tells a member of another member's action (package notify; process_send).
	Notification
	// TenantChoice asks a member of several tenants on a shared number which one a message is
	// for (package choice; process_send).
	TenantChoice
)

// String names the kind in logs and tests.
func (k Kind) String() string {
	switch k {
	case DefaultReply:
		return "default_reply"
	case ConversationReply:
		return "conversation_reply"
	case ActionResult:
		return "action_result"
	case APISend:
		return "api_send"
	case ConsoleReply:
		return "console_reply"
	case ParkedRelease:
		return "parked_release"
	case Notification:
		return "notification"
	case TenantChoice:
		return "tenant_choice"
	}
	return "unknown"
}

// Kinds lists every kind, for tests and tables.
var Kinds = []Kind{DefaultReply, ConversationReply, ActionResult, APISend, ConsoleReply, ParkedRelease, Notification, TenantChoice}

// WindowRule says what a closed 24-hour customer service window does to a free-form message.
type WindowRule int

const (
	// WindowUnchecked: the window is not read before the send; Meta's 131047 is a plain refusal.
	WindowUnchecked WindowRule = iota + 1
	// WindowRefuse: a closed window refuses the message before any send, as Meta's 131047 does.
	WindowRefuse
	// WindowReengage: the tenant's templates.reengage replaces the message when the window is
	// closed (before the send, or once after Meta's 131047); without one it is refused.
	WindowReengage
	// WindowFallback: the request's Fallback (a notification's templates.notify) replaces the
	// message when the window is closed (before the send, or once after Meta's 131047); without
	// one the message is skipped, never replaced by the reengage template.
	WindowFallback
)

// ReauthRule says what a send refused for its token does when the tenant turns out to have a
// newer token already (nothing to park).
type ReauthRule int

const (
	// ReauthRetry: the task is retried; its next attempt sends with the new token.
	ReauthRetry ReauthRule = iota + 1
	// ReauthResend: sent once more at once with the new token.
	ReauthResend
)

// Policy is how one kind of send answers the cases where the kinds differ on purpose.
//
// What every kind shares: a send whose outcome is unknown is sent again once the evidence says
// Meta never took it, and is otherwise held on its record up to Deliverer.MaxUnknownWait
// (unknown.go); a deliberate skip (nothing to say, outside the window with no template, opted
// out) is a record state; any other send that ends unsent (refused by Meta, unsendable until an
// operator acts, retries exhausted, an outcome still unknown at the cap) is a dead letter, never
// a log line alone.
type Policy struct {
	// RecordDeadLetter: a send that ends unsent dead-letters its own record (a process_send task
	// that sends it from the record, after `wapipe replay`), never the task that sent it: that
	// task is a conversation's, and keeping it would hold up the next turn. Without it the task
	// itself is the dead letter: a process_send task already sends from its record, and a default
	// reply's task answers its one message.
	RecordDeadLetter bool
	// Window is what a closed 24-hour window does.
	Window WindowRule
	// Reauth is what a token refusal does when a newer token exists. A tenant's send refused for
	// its token is otherwise always parked until a new token is set (the single-tenant default,
	// with no tenant to mark, dead-letters it).
	Reauth ReauthRule
}

// PolicyFor is the policy of kind k. The differences, and why:
//   - a conversation goes on after one reply fails: its replies dead-letter their own records,
//     and a closed window sends the reengage template;
//   - a reply, an action's result and a released reply may re-engage; an api or console send
//     says exactly what it sends, so a closed window refuses it;
//   - a send from its record (api, console, release) is re-sent at once with a newer token;
//     a reply's task is retried instead (its next attempt reads the tenant afresh);
//   - a notification is not a reply: outside the window it goes as its own template or not at
//     all, and a "resume the conversation" template would tell the member nothing;
//   - a tenant choice answers the message that just arrived, inside its window by construction,
//     and belongs to no conversation to re-engage.
func PolicyFor(k Kind) Policy {
	switch k {
	case ConversationReply, ActionResult:
		return Policy{RecordDeadLetter: true, Window: WindowReengage, Reauth: ReauthRetry}
	case APISend:
		return Policy{Window: WindowRefuse, Reauth: ReauthResend}
	case ConsoleReply, ParkedRelease:
		return Policy{Window: WindowReengage, Reauth: ReauthResend}
	case Notification:
		return Policy{Window: WindowFallback, Reauth: ReauthResend}
	case TenantChoice:
		return Policy{Window: WindowUnchecked, Reauth: ReauthResend}
	default:
		return Policy{Window: WindowUnchecked, Reauth: ReauthRetry}
	}
}
