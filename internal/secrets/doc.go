// Package secrets seals tenant secrets at rest (WhatsApp access tokens, action signing
// secrets): a Keeper encrypts a secret before it is stored in Firestore and decrypts it when a
// send or an action call needs it.
//
// # Envelope encryption
//
// Every Encrypt makes a fresh AES-256-GCM data key (DEK), seals the secret with it locally, and
// has a key-encryption key (KEK) wrap the DEK; the stored ciphertext holds the wrapped DEK and
// the sealed secret. In production the KEK is a Cloud KMS key (KMS_KEY_NAME): the secret itself
// never leaves the process, only the 32-byte DEK goes to KMS, and a copy of the database is
// useless without the right to call KMS Decrypt on that key. Each Encrypt and each Decrypt
// makes exactly one KMS call (wrap or unwrap the DEK); callers that read a secret often should
// keep the plaintext in memory for a short while rather than decrypt on every use.
//
// With APP_ENV=dev and no KMS_KEY_NAME the KEK is a fixed development key compiled into this
// package, so the CLI, the worker and the api agree with no setup. That key is public: it
// protects nothing and New refuses it unless Config.Dev is set. Dev ciphertexts and KMS
// ciphertexts carry a different prefix, so handing one to the other kind of Keeper fails with
// ErrKeyKind rather than with a confusing decryption error.
//
// # One key per purpose
//
// Tenant secrets (KMS_KEY_NAME) and connect links' states (CONNECT_STATE_KMS_KEY_NAME) are
// sealed under different keys, so that IAM can give each service only what it does on each: the
// public api opens states but may only seal tokens, the worker opens tokens, the console seals
// states. Split (and NewSplit) make one Keeper of the two that picks the key from the purpose in
// the associated data; a side a service holds no key for refuses its purpose with ErrNoKey.
//
// # Associated data
//
// Encrypt and Decrypt take associated data that binds a ciphertext to its place; build it with
// AD(tenantID, purpose). A ciphertext copied to another tenant or another purpose does not
// decrypt (ErrNotAuthentic). The AD is authenticated, not stored: the caller supplies the same
// value on both sides.
//
// # Why Tink
//
// The cryptography is Google's Tink (github.com/tink-crypto/tink-go/v2): aead.NewKMSEnvelopeAEAD2
// with an AES256-GCM DEK template, and tink-go-gcpkms for the KMS AEAD. Tink is what Google
// documents for client-side envelope encryption with Cloud KMS, it verifies the CRC32C integrity
// fields of every KMS request and response, and its envelope format is stable and shared with
// other languages. gocloud.dev/secrets would be simpler to wire but sends the whole secret to KMS
// (no envelope) and offers no associated data, which is how a ciphertext is bound to its tenant.
// The KMS client uses the REST transport (google.golang.org/api/cloudkms/v1), which is also
// what the fake in package kmsfake speaks.
//
// Tink's REST KMS AEAD takes no context, so a context cancelled before a call stops it, but an
// in-flight KMS call is bounded by the HTTP client's timeout (10 s by default) instead.
//
// # Errors
//
// Errors never contain plaintext, and this package logs nothing; it also silences the Google
// client libraries' own debug logging (GOOGLE_SDK_GO_LOGGING_LEVEL), whose request log would
// show data keys in clear. Decrypt failures are classified: ErrNotAuthentic (tampered, wrong AD,
// another key: permanent), ErrKeyKind (dev vs KMS ciphertext: permanent), ErrMalformed (not a
// ciphertext of this package), ErrKMS (Cloud KMS could not be reached or refused the call:
// usually transient, or an IAM problem). Use errors.Is.
package secrets
