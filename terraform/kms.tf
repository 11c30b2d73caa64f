# Two keys, one per purpose, each in a key ring of its own (a grant on a ring covers every key
# in it, so a ring-level grant can never spill from one purpose to the other). Grants are on the
# key only, never on a ring or the project.
#
#   tenant-secrets (KMS_KEY_NAME): tenant secrets at rest (access tokens, action secrets),
#     envelope-encrypted (internal/secrets): each secret has its own data key, sealed by this key.
#     Decrypt: the worker only (it sends and signs actions). Encrypt only: the api (Embedded
#     Signup stores a token) and the operators (set-token, action-secret). Nothing for the webhook
#     and the console.
#   connect-states (CONNECT_STATE_KMS_KEY_NAME): the state of a connect link (valid one hour).
#     Encrypt and decrypt: the api (it opens the states). Encrypt only: the console (Reconnect)
#     and the operators (connect-link). Nothing for the webhook and the worker.
#
# So the public services hold no right to read a tenant secret: a compromised api can seal a
# token, and open connect states, never read a stored token back. terraform/kms_test.go holds the
# table of these grants.
resource "google_kms_key_ring" "wapipe" {
  project  = var.project_id
  name     = var.name_prefix
  location = var.region

  depends_on = [google_project_service.api["cloudkms.googleapis.com"]]
}

resource "google_kms_crypto_key" "tenant_secrets" {
  name     = "tenant-secrets"
  key_ring = google_kms_key_ring.wapipe.id
  purpose  = "ENCRYPT_DECRYPT"

  # A new primary version every 90 days; old versions stay enabled, so older ciphertexts still
  # open (each names the version that sealed its data key).
  rotation_period = "7776000s"

  version_template {
    algorithm        = "GOOGLE_SYMMETRIC_ENCRYPTION"
    protection_level = "SOFTWARE"
  }

  # Destroying the key makes every stored token unreadable: never by accident.
  lifecycle {
    prevent_destroy = true
  }
}

resource "google_kms_key_ring" "connect_states" {
  project  = var.project_id
  name     = "${var.name_prefix}-connect-states"
  location = var.region

  depends_on = [google_project_service.api["cloudkms.googleapis.com"]]
}

resource "google_kms_crypto_key" "connect_states" {
  name     = "connect-states"
  key_ring = google_kms_key_ring.connect_states.id
  purpose  = "ENCRYPT_DECRYPT"

  # States live one hour: a new primary version every 30 days is plenty, and losing the key
  # would only void the links of the hour.
  rotation_period = "2592000s"

  version_template {
    algorithm        = "GOOGLE_SYMMETRIC_ENCRYPTION"
    protection_level = "SOFTWARE"
  }
}

locals {
  # KMS_KEY_NAME and CONNECT_STATE_KMS_KEY_NAME: the keys' full names
  # (projects/P/locations/L/keyRings/R/cryptoKeys/K), never a version, so encryption follows
  # rotation.
  kms_key_name               = google_kms_crypto_key.tenant_secrets.id
  connect_state_kms_key_name = google_kms_crypto_key.connect_states.id
}

# The worker opens tenant tokens to send on their behalf, and action secrets to sign action
# calls; it never seals them.
resource "google_kms_crypto_key_iam_member" "worker_decrypts_tenant_secrets" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyDecrypter"
  member        = "serviceAccount:${google_service_account.worker.email}"
}

# The api seals the tokens Embedded Signup brings; it cannot read one back.
resource "google_kms_crypto_key_iam_member" "api_encrypts_tenant_secrets" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = "serviceAccount:${google_service_account.api.email}"
}

# The api opens connect links' states (sealed by operators and the console), and may seal its own.
resource "google_kms_crypto_key_iam_member" "api_uses_connect_states" {
  crypto_key_id = google_kms_crypto_key.connect_states.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:${google_service_account.api.email}"
}

# The console seals the connect links its Reconnect button makes (as operators do with
# `wapipe tenants connect-link`); it never opens a state nor touches a tenant secret.
resource "google_kms_crypto_key_iam_member" "console_seals_connect_states" {
  crypto_key_id = google_kms_crypto_key.connect_states.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = "serviceAccount:${google_service_account.console.email}"
}
