// Package tenant is the model of a wapipe tenant (one business: its WhatsApp numbers,
// members, sending rate, limits, quota and assistant) and its YAML file, the input of
// `wapipe tenants apply`.
//
// Parse reads a file strictly (unknown keys are errors), fills the contract's defaults and
// validates it; every problem comes back at once as Problems, one line each, naming the
// field path and the file's line. Diff says what an apply changes, in lines an operator can
// read (member numbers masked). CheckNumbers checks the numbers against the tenants that list
// them now, which only the store knows: a number listed by several tenants must be shared: true
// in every one of them, with the same waba_id.
//
// The types carry firestore tags with the file's snake_case names so the store can save a
// Tenant as it is. Two representations differ from the file: a Limit's Per (a time.Duration)
// is stored by Firestore's Go client as an integer number of nanoseconds, and an intent's
// Fields, a mapping in the file whose order matters, is stored as an array of {name, type}
// maps. The package does no I/O.
package tenant
