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
	}
	return "unknown"
}

// Kinds lists every kind, for tests and tables.
var Kinds = []Kind{DefaultReply, ConversationReply, ActionResult, APISend, ConsoleReply, ParkedRelease, Notification}

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
type Policy struct {
	// UnknownDeadLetter: an earlier send whose outcome stayed unknown past the reconcile window
	// keeps the task as a dead letter (reason outcome_unknown) for an operator to check and
	// replay. Without it the record is failed and the caller goes on (a conversation answers the
	// next message). On the task's last attempt an outcome still awaited always keeps it: a
	// replay reopens the failed record.
	UnknownDeadLetter bool
	// UnsendableDeadLetter: a send that cannot go out until an operator acts (tenant gone, no
	// token, a token sealed for another key) keeps the task as a dead letter to replay after the
	// fix. Without it the record is failed and the caller goes on.
	UnsendableDeadLetter bool
	// Window is what a closed 24-hour window does.
	Window WindowRule
	// Reauth is what a token refusal does when a newer token exists. A tenant's send refused for
	// its token is otherwise always parked until a new token is set.
	Reauth ReauthRule
	// AuthDeadLetter: a token refusal that cannot be parked (the single-tenant default has no
	// tenant to mark) fails the record and keeps the task as a dead letter to replay once the
	// token is fixed.
	AuthDeadLetter bool
}

// PolicyFor is the policy of kind k. The differences, and why:
//   - a conversation goes on after one reply fails: its replies never dead-letter the task for
//     an unknown outcome past the window or an unsendable tenant (the next turn would be stuck
//     behind it), and a closed window sends the reengage template;
//   - a reply, an action's result and a released reply may re-engage; an api or console send
//     says exactly what it sends, so a closed window refuses it;
//   - a send from its record (api, console, release) is re-sent at once with a newer token;
//     a reply's task is retried instead (its next attempt reads the tenant afresh);
//   - a notification is not a reply: outside the window it goes as its own template or not at
//     all, and a "resume the conversation" template would tell the member nothing.
func PolicyFor(k Kind) Policy {
	switch k {
	case ConversationReply, ActionResult:
		return Policy{Window: WindowReengage, Reauth: ReauthRetry}
	case APISend:
		return Policy{UnknownDeadLetter: true, UnsendableDeadLetter: true, Window: WindowRefuse, Reauth: ReauthResend}
	case ConsoleReply, ParkedRelease:
		return Policy{UnknownDeadLetter: true, UnsendableDeadLetter: true, Window: WindowReengage, Reauth: ReauthResend}
	case Notification:
		return Policy{UnknownDeadLetter: true, UnsendableDeadLetter: true, Window: WindowFallback, Reauth: ReauthResend}
	default:
		return Policy{UnknownDeadLetter: true, UnsendableDeadLetter: true, Window: WindowUnchecked, Reauth: ReauthRetry, AuthDeadLetter: true}
	}
}
