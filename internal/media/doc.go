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
// Memory is bounded per instance by a Budget (MEDIA_INFLIGHT_BYTES, DefaultInflightBytes): a
// turn's file is charged Footprint (3) times its size, the size Meta's lookup announces, before
// the download starts; bytes beyond it (a lookup that understates or gives no size) are charged
// as they arrive. The file is read into one buffer of that size, never copied on the way (package
// llm streams its base64 into the request). A turn that cannot get its charge within the
// budget's wait fails with ErrBusy, which wraps assistant.ErrRetry: the turn is redone later,
// never answered "send it again", and the worker answers 503. The charge is released by the
// caller once the turn's model call is done.
//
// The worker wires it in three steps: WithToken(fetcher, token) as assistant.Input.Media for a
// tenant in mode llm (the engine calls it only after the guardrails), releasing the turn's
// charge when the turn returns; Describe(msg) as the stored message's Media; and Describe with the
// Outcome's attachment when it wants the size.
package media
