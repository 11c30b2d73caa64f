// Package members applies a tenant's audience to an incoming message before the assistant sees
// it: who is a member (from the tenant file, or joined by invite), the onboarding prompt a
// non-member gets, and the invite codes that make one a member (on a shared number, a member of
// that tenant there and of no other tenant on the number).
package members
