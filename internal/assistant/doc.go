// Package assistant decides one turn of a conversation with a tenant's assistant: given the
// inbound message, the tenant, the sender and the state the previous turn left, it returns the
// replies to send, the action to run (if any) and the new state. It does no I/O of its own:
// the LLM and the shared counters (the sender rate limit, the monthly quota) are small injected
// interfaces, so the worker wires it to Vertex AI and Firestore, and tests to fakes.
//
// # One turn
//
// Engine.Turn handles, in this order:
//
//   - mode ack: the rate limits below, then the tenant's ack_text, or the localized
//     acknowledgement.
//   - an answer to the pending action (the confirm_yes / confirm_no buttons, or a whole-message
//     confirming or rejecting word, see i18n.IsConfirm; a tap on any other button is an
//     ordinary message, whatever its title says): confirm → an ActionRequest with the
//     pending action's id and no reply (the action step sends the one message the user gets);
//     reject → "cancelled"; a pending action past its 30 minutes, or a tap on an older
//     confirmation (Input.StaleButton), → "expired". These never call the
//     LLM and are not rate limited: each answers one earlier LLM turn, and dropping it would lose
//     the user's decision.
//   - reactions, stickers, system notices, request_welcome and blank texts: ignored, nothing sent.
//   - the rate limits: per conversation (counted in the turnstate.State, exact because the turns
//     of one conversation are serialised) then per sender across the tenant's numbers (counted by
//     the Guard). Over a limit: no LLM call, one localized notice for the first message over the
//     limit in its window, silence for the others.
//   - a confirm_yes / confirm_no tap with nothing pending → "nothing to confirm"; a message it
//     cannot read (unsupported, or a media message when Input.Media is nil) → "send it another
//     way". A location, contact cards and a list choice reach the model as text (see TestTextForms);
//     an image, audio, video or document of a type Gemini does not take inline →
//     i18n.MediaUnsupported, before the quota gate.
//   - media: after the quota gate, Input.Media fetches the file (never before: a limited or
//     over-quota message downloads nothing); it goes to the model inline beside its caption or
//     file name, and the history keeps "[photo] caption", never the bytes. A refusal of the
//     loader (ErrMediaUnsupported, ErrMediaTooLarge → i18n.MediaUnsupported; ErrMediaGone,
//     ErrMediaMismatch → i18n.MediaResend) ends the turn with EventMediaRefused and keeps a
//     pending action; another error redoes the turn (ErrRetry), or asks to resend on the last
//     attempt.
//   - the quota gate, the only caller of Guard.ReserveCall, before every LLM call: it reserves
//     against the tenant's monthly quota and the contact's share of it (tenant.Quota.SenderShare)
//     at once. A conversation that met either caches a turnstate.QuotaBlock and skips the check
//     until the period rolls over or the limit is raised; a refusal sends the quota notice (again
//     once per conversation window for the tenant's quota, never again in the period for the
//     contact's share); an error while checking blocks the call (fail safe) and sends the
//     "unavailable" fallback.
//   - the LLM: any pending action is dropped (a correction is a fresh turn). An intent whose roles
//     exclude the sender → "not allowed"; low confidence or missing required fields → the model's
//     reply as a clarification; confirm: true → the reply, then the data lines wapipe renders
//     from the data the action will carry ("field: value" in the intent's field order), with two
//     buttons, and a new pending action; confirm: false → an ActionRequest now, no interim
//     reply; general_query → the reply. The action's data are the intent's fields only: what the
//     user confirms is what the business receives, whatever the model's prose says.
//     An answer the schema rejects is asked again once within the turn, then "not understood".
//     Vertex AI unavailable → Turn returns an error matching ErrRetry and no Outcome: the worker
//     redoes the turn later through Cloud Tasks (on the task's last attempt it passes
//     Input.LastAttempt and the user gets the localized "unavailable" message instead).
//
// # Redone turns
//
// Turn does not modify its Input and derives everything from it: action ids (ActionID), quota
// reservation ids and reply indexes are functions of the tenant, conversation and message ids,
// and the only clock is Input.Now, which the worker should take from the inbound task (stable
// across retries). So a turn redone after a crash, from the same state, takes the same path and
// yields the same ids; the worker gives each Reply.Index its own idempotency record. Only the
// model's text can differ between two LLM calls.
//
// Onboarding of non-members (audience members, invite codes) happens before Turn, in the worker,
// which counts their replies with turnstate.State.HitOnboarding (5 an hour, then silence).
package assistant
