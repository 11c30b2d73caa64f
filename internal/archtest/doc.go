// Package archtest holds tests of the code's shape that no single package can check: which
// packages may import which client libraries, which may move an outbound record's send state
// (only the store and package delivery), how long a function of internal/ or cmd/ may be, how
// many production lines a service package may hold (its capabilities have rooms), which project
// packages the store may reach (leaves: its only I/O is Firestore), and which packages a binary's
// build must not contain (the webhook's: neither the LLM client nor the Gemini SDK).
package archtest
