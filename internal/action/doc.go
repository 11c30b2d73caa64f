// Package action calls a business's own system when the assistant executes an intent: one
// signed, idempotent HTTP POST per action, and the classification of the answer.
//
// The call is fixed by the contract:
//
//	POST {action_url}
//	Content-Type: application/json
//	Idempotency-Key: {action_id}
//	X-Wapipe-Signature-256: sha256={hex HMAC-SHA256 of the raw body}
//	User-Agent: wapipe-action/1 (+https://github.com/wapipe/wapipe)
//
//	{"action_id":"…","tenant_id":"…","intent":"…","data":{…},
//	 "from":{"wa_id":"…","name":"…","role":"…"},"conversation_id":"…","requested_at":"2026-03-01T08:00:00Z"}
//
// The HMAC key is the bytes of the action secret exactly as `wapipe tenants action-secret`
// printed it ("whsec_…", prefix included); the MAC covers the body bytes exactly as sent. A
// business verifies a call by computing the same HMAC over the raw body it received (before any
// JSON parsing) and comparing it in constant time, which Verify does; it should then run the
// action at most once per Idempotency-Key and answer a repeated key with its first answer.
//
// The answer decides what happens next (Kind):
//
//   - 2xx: Done. An optional {"reply":"…"} is the text for the user.
//   - 4xx, except 408 and 429: Refused, a business refusal told to the user ({"reply":"…"},
//     or a localized error when there is none) and never retried: asking again would get the
//     same answer. A 401 or 403 (usually a wrong secret) is a refusal too.
//   - 5xx, 408, 429, a timeout (DefaultTimeout) or a network error: Retry, with the answer's
//     Retry-After when it had one. The body of such an answer is not read for a reply: the user
//     is told nothing until the action is done, refused or given up.
//   - anything else, or a call that could not be made (invalid URL, missing field, a redirect):
//     Failed, permanently.
//
// Redirects are never followed: the call carries a signature and the user's data, and
// following a 307 or 308 would replay both to wherever the Location header points. A 3xx is
// Failed; the tenant's action_url must be the final URL.
//
// Action URLs must be https://, except http:// to a loopback host (127.0.0.1, ::1,
// localhost) for local development.
//
// The package neither stores nor retries: the worker runs each action as its own task, keeps
// the "at most once per action_id" record, and decides on the last attempt. Errors and
// results never carry the secret, the request body, or the URL's query.
package action
