// Package service starts and stops a wapipe Cloud Run service the one way all of them do: Main
// runs a command under a signal context and turns its error into one log line and an exit code;
// Start builds the clients a service asks for (telemetry, Firestore, Cloud Tasks, the secrets
// keeper) and returns the cleanup that closes them, last first; Clients.Serve listens on $PORT,
// answers the startup probe (StartupPath) while its Warmup opens and exercises those clients, and
// drains in-flight requests when the context ends. The mains, the Cloud Functions entry points and
// the local stack build their clients here, so there is one place where a client is opened and
// closed.
package service
