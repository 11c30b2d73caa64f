// Package delivery sends every message wapipe sends, exactly once: the default reply, a
// conversation's reply, an action's result, an api send, a console reply and a parked send
// released. Each goes begin → send → settle on its outbound record (store.Outbound), and no
// other package moves a record's send state (internal/archtest checks it).
//
// The kinds of send differ on purpose in a few places: what an outcome still unknown, a tenant
// with no usable token, a closed 24-hour window and an auth error do. Those differences are the
// Policy of each Kind (policy.go), not copies of the send path. Deliver returns a typed Result;
// the caller (the worker's adapter) turns it into a task outcome, or, for the replies of a
// conversation and an action's result, ReplySender turns it into what they act on (reply.go).
// The record carries the reason of a failure as a code in its own field (failure_reason).
package delivery
