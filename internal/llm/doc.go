// Package llm extracts the intent of a WhatsApp message with Vertex AI Gemini: one
// generateContent call per turn with a JSON response schema built from the tenant's intents,
// and a local validation of the answer, because the model's output is untrusted.
//
// A Client is built once per process with New and shared; Extract is safe for concurrent use.
// A service that may never need it (a worker whose tenants all answer in ack mode) uses Lazy,
// which builds the Client on the first Extract, so a missing credential only fails llm turns,
// as an outage, and never the start-up.
// In production the client authenticates with Application Default Credentials (the Cloud Run
// service account). With Config.BaseURL set (development only) it sends no credentials at all,
// so it can talk to a compatible fake such as package geminifake without any Google account.
//
// Failures come back as *Error whose kind is tested with errors.Is: ErrUnavailable (retry the
// turn later), ErrInvalidResponse (the model's answer failed the schema or validation) and
// ErrPermanent (the request itself is wrong, e.g. an unknown model). Error texts never quote the
// user's message or the model's answer.
package llm
