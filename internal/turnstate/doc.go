// Package turnstate holds what a conversation's turns keep between them, as values: the State a
// conversation carries from one turn to the next (its recent turns, the pending action, the
// cached quota block, its rate windows), and the counters that turns of different conversations
// share (a sender's rate Window, the monthly quota's CallReservation and TokenUse).
//
// It is a leaf (it imports only tenant) so that the store can save and read these values with
// their Firestore field names without importing package assistant, which decides turns and
// brings the LLM client with it: whatever imports the store (the public webhook included) stays
// free of the LLM client and the Gemini SDK. Package assistant decides how a turn changes these
// values; the store keeps them as they are.
package turnstate
