// Package conversation runs the turns of a conversation one at a time, in Meta timestamp order,
// whatever order and concurrency Cloud Tasks delivers its messages in.
//
// # The inbox and the lease
//
// Every inbound message is first stored in its conversation's inbox (a redelivery stores
// nothing). The task that stored it then tries to take the conversation's lease, which carries a
// fencing number that grows each time the lease is taken. A task that finds the lease held
// returns Result.Queued with ErrHeld: its message is in the inbox and a live holder runs it at
// once, but the holder may be dead, so the caller does not acknowledge the task (Cloud Tasks
// retries it, and the retry finds the message handled or takes over after a dead holder's lease).
// The holder drains the inbox: it runs the oldest pending message's
// turn with the state the previous turn left, commits the new state and the marked-done message
// in one transaction that fails if its fencing number is no longer the conversation's, then
// performs the turn's effects (replies, action), and goes on until the inbox is empty. Then it
// releases the lease and looks at the inbox once more: a message stored while it was releasing
// may have found the lease held, so the holder takes the lease again for it. A second message is
// thus picked up by the running drain at once, never by a Cloud Tasks retry.
//
// # Crashes
//
// The holder's own task is acknowledged only when Handle returns, after the drain, so a holder
// that dies leaves its task to be retried: once its lease (DefaultLease, renewed by each commit)
// expires, the retry takes it with a higher fencing number and drains the inbox, including the
// messages of the tasks that were answered Queued (whose own retries would take over too). A
// holder killed on its task's last attempt leaves no retry: the worker's sweep (package sweep)
// finds the conversation once its lease has expired unreleased, and creates a task for its oldest
// inbox message that takes over in the same way. A stale holder that wakes up cannot commit.
// A turn killed before its commit is redone from the same state (the assistant is deterministic
// given the message's received_at); a turn killed after it is not redone: its effects were
// recorded with the commit, so the next holder performs them first. Effects are idempotent:
// each reply has its own idempotency key (ReplyKey: the message id and the reply's index) and
// the action its action id, and they are always performed from what was recorded, so a redo
// sends exactly what the first attempt decided, once.
//
// # Order of effects
//
// A turn's replies go out while the next turn runs (so a second message waits for no Graph
// call), but never before the previous turn's replies have gone: effects are performed in
// commit order. Effects that fail stop the drain; the next holder (or the retry) performs them
// first. A confirm_yes / confirm_no tap waits for the running effects before its turn: the turn
// checks the tap answers the pending action's prompt by the Graph id those effects record.
package conversation
