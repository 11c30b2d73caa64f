// Package actioncall calls a business's own system when the assistant executes an intent: one
// signed, idempotent HTTP POST per action, and the classification of the answer.
//
// The call is fixed by the contract:
//
//	POST {action_url}
//	Content-Type: application/json
//	Idempotency-Key: {action_id}
//	X-Wapipe-Signature-256: t={unix seconds},v1={hex HMAC-SHA256 of "{t}.{Idempotency-Key}.{raw body}"}
//	User-Agent: wapipe-action/1 (+https://github.com/wapipe/wapipe)
//
//	{"action_id":"…","tenant_id":"…","intent":"…","data":{…},
//	 "from":{"wa_id":"…","user_id":"…","username":"…","name":"…","role":"…"},"conversation_id":"…",
//	 "requested_at":"2026-03-01T08:00:00Z"}
//
// In "from", wa_id (the phone) is absent when Meta did not share it (a user with a username),
// user_id (the business-scoped user id) when the person is known by phone alone, and username
// when they have none.
//
// The signature is Stripe's scheme. The HMAC key is the bytes of the action secret exactly as
// `wapipe tenants action-secret` printed it ("whsec_…", prefix included); the MAC covers the
// timestamp t (when the call was sent), the Idempotency-Key and the body bytes exactly as sent,
// each separated by a dot. A business verifies a call by computing the same HMAC over the raw
// body it received (before any JSON parsing), comparing it in constant time with each v1 of
// the header, and refusing a t more than five minutes from its clock (SignatureTolerance): a
// captured call can then be neither replayed later nor sent again under another
// Idempotency-Key. Verify does this; the VerifySignature example is the same check in the
// standard library alone, to copy. The business should then run the action at most once per
// Idempotency-Key and answer a repeated key with its first answer. Each attempt is signed
// anew (its own t); the body and the Idempotency-Key stay the same.
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
//   - anything else, or a call that could not be made (invalid URL, missing field, a redirect,
//     an address that is not public): Failed, permanently.
//
// Redirects are never followed: the call carries a signature and the user's data, and
// following a 307 or 308 would replay both to wherever the Location header points. A 3xx is
// Failed; the tenant's action_url must be the final URL.
//
// Outside dev (APP_ENV staging or prod) an action URL must be https:// to a public address.
// The client resolves the host itself and connects only to addresses it checked (CheckAddr):
// loopback, private (RFC 1918, fc00::/7), link-local (169.254.0.0/16, fe80::/10, so the
// metadata server 169.254.169.254), unspecified, multicast, carrier-grade NAT (100.64.0.0/10)
// and the other reserved ranges are refused, IPv4-mapped, NAT64 and 6to4 forms judged by the
// IPv4 address inside; so are names such as localhost, metadata.google.internal, *.internal,
// *.local and single labels. The check runs on the socket's address just before it connects,
// so a DNS answer that changes between check and call (DNS rebinding) cannot slip through. A
// refused call is Failed (ErrNotPublic) and no connection is made. `wapipe tenants apply`
// makes the same check up front (CheckPublicURL). In dev, http:// to a loopback host
// (127.0.0.1, ::1, localhost) is allowed and addresses are not checked.
//
// The package neither stores nor retries: the worker runs each action as its own task, keeps
// the "at most once per action_id" record, and decides on the last attempt. Errors and
// results never carry the secret, the request body, or the URL's query.
package actioncall
