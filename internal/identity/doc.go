// Package identity verifies who calls a private service: the Google ID tokens Cloud Run's IAM
// check accepts (the worker's Cloud Tasks, the console's operators), Cloud IAP's signed header,
// and, in dev only, a loopback caller. A header that only names a user proves nothing: an
// identity comes from a signature this package (or Cloud Run, which then removes it) verified.
package identity
