// Package tenantcache keeps, per instance, what every message of a tenant needs and a
// Firestore read or a KMS call per message would make slow and costly: the tenants (by id and
// by business number, a few seconds old at most) and their decrypted access tokens and action
// signing secrets, and the tenant of each contact on a shared number (ContactRouter). A token the
// Graph API refused is remembered at once.
package tenantcache
