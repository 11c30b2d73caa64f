// Package signup is Embedded Signup, the flow that connects (or reconnects) a tenant's WhatsApp
// account, mounted by the api service (internal/api) at its routes (ConnectPath, CallbackPath).
//
// The state of a connect link is sealed with the secrets keeper (so the CLI that makes it,
// `wapipe tenants connect-link`, the console's Reconnect and the service that opens it share no
// other secret), valid an hour and used once. The link opens a page naming the tenant; only its
// button (a same-origin POST bound to the browser by a double-submit cookie) spends the link and
// starts Meta's dialog, and the callback accepts a login only when it shares every account the
// tenant has: then the app is subscribed, the numbers registered, the token sealed and stored,
// and the sends parked while the tenant needed a new token released.
package signup
