// Package failures is the console's room of what went wrong: the dead letters, each with its
// error, its tenant and conversation and whether a replay can succeed (never its body, which
// holds a customer's message), their replay with wapipe replay's guarantees, and the search that
// wapipe inspect does. No URL it makes carries a person: searches are POSTs, and a GET runs only
// a keyed ref_ or a dead letter's id. The console mounts it (internal/console); it renders with
// the console's page kit (internal/console/page).
package failures
