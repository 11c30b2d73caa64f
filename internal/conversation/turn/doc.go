// Package turn is what a tenant's message goes through, from its task to its conversation's
// turn. On arrival (Turner.Handle): an identity change is followed and not answered; otherwise
// the sender's contact and conversation are found, the message is marked read beside the rest,
// and the message is handed to its conversation's runner (package conversation), which stores
// it in the inbox and runs the turns in order. Each turn then takes the same steps, in this
// order: the message's events applied to the stored records (a revoke erases, an edit changes,
// a number change moves), the tenant read (a deleted tenant answers nothing), the membership
// gate (onboarding, invite codes: package members), the stale-button check of a confirmation
// tap, and the assistant's turn with the message's file fetched on the tenant's token.
//
// The worker builds the conversation.Inbound from its task, calls Handle and turns the result
// into its answer to Cloud Tasks; its dependencies are small interfaces declared here, and
// nothing here calls back into the service that mounted it. Replies and actions leave through
// the runner's Sender and Actions (delivery.ReplySender, actionrun.Queue).
//
// The single-tenant default's messages (a number no tenant owns) have no conversation: Default
// applies their events and composes the Responder's reply, which the worker sends once.
package turn
