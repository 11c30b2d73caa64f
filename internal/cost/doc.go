// Package cost prices the operations one message takes on Google Cloud, at list prices held
// here as constants, so a benchmark's counts become dollars per 1,000 messages.
//
// The prices are the public list prices for us-central1 (the project's region) as the author
// knew them in July 2025, from these pages:
//
//   - Firestore:  https://cloud.google.com/firestore/pricing (Native mode, Standard edition)
//   - Cloud Tasks: https://cloud.google.com/tasks/pricing
//   - Cloud Run:  https://cloud.google.com/run/pricing (request-based billing, tier 1)
//   - Vertex AI:  https://cloud.google.com/vertex-ai/generative-ai/pricing (Gemini 2.5 Flash)
//
// They were not checked against the live pages when written: check them before quoting a
// figure. Free tiers (Firestore's daily 50,000 reads and 20,000 writes and deletes, Cloud
// Tasks' first million operations a month, Cloud Run's monthly 180,000 vCPU-seconds) are left
// out: the figures are the marginal cost of a message once a deployment is past them.
package cost
