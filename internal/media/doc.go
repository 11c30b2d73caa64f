// Package media fetches the file of an inbound WhatsApp media message (image, audio, video,
// document) for the assistant, which sends it to Gemini inline.
//
// Fetcher.Fetch looks the media id up on the Graph API with the tenant's token
// (GET /{version}/{media-id} → url, mime_type, sha256, file_size), then downloads the url with
// the same bearer token, streamed under a size cap (MEDIA_MAX_BYTES, DefaultMaxBytes), and
// checks the bytes against the webhook's sha256 (base64 there, hex in the lookup: digests are
// compared, not strings). The bytes live in memory for the turn only: never stored, never
// logged; neither are the caption and the file name, which are message content.
//
// Failures are *Error values whose kind is tested with errors.Is: ErrUnsupported, ErrTooLarge,
// ErrGone (Meta no longer has it) and ErrMismatch are refusals the user is told about (they are
// the assistant package's ErrMedia… values); ErrRetryable (a Graph 5xx, a timeout) means try the
// turn again later; ErrAuth means the tenant's token was refused (the *graph.Error stays in the
// chain, so graph.Classify reports Auth).
//
// The worker wires it in three steps: Loader(token) as assistant.Input.Media for a tenant in
// mode llm (the engine calls it only after the guardrails), Describe(msg) as the stored
// message's Media, and Describe with the Outcome's attachment when it wants the size.
package media
