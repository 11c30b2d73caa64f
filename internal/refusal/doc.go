// Package refusal is wapipe's one vocabulary of refusals: the error a rule or a route returns
// when it will not do what it was asked (nothing was stored, queued or sent), the codes that say
// which rule, and the body {"error":{"code","message"}} that carries one over HTTP.
//
// The outbox refuses sends with it; the worker's tenant routes (internal/tenantcalls) answer
// with it and their client (internal/workerclient) reads it back; the api answers its callers
// with it, and the console shows its message. So each code is spelled once, here, and a refusal
// passes from one to the next as it is. The codes are the contract's (CONTRACT.md): their
// spelling never changes.
//
// A refusal names no HTTP status of its own unless it was read from an answer (a client's) or
// is answered as one (a tenant route's): the service that answers maps its code to a status, in
// one table each (the api's answers, the tenant routes' contract).
//
// The package is a leaf: it imports nothing of the project, so every layer may use it.
package refusal
