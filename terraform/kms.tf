# Tenant secrets at rest (access tokens, later action secrets) are envelope-encrypted under this
# key (internal/secrets, KMS_KEY_NAME): each secret has its own data key, sealed by the KMS key.
# Only the worker decrypts; operators (`wapipe tenants set-token`) only encrypt.
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

locals {
  # KMS_KEY_NAME: the key's full name (projects/P/locations/L/keyRings/R/cryptoKeys/K), never a
  # version, so encryption follows rotation.
  kms_key_name = google_kms_crypto_key.tenant_secrets.id
}

# The worker opens tenant tokens to send on their behalf; it never seals them.
resource "google_kms_crypto_key_iam_member" "worker_decrypts" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyDecrypter"
  member        = "serviceAccount:${google_service_account.worker.email}"
}

# The api opens connect links' states (sealed by operators) and seals the tokens Embedded Signup
# brings.
resource "google_kms_crypto_key_iam_member" "api_decrypts" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyDecrypter"
  member        = "serviceAccount:${google_service_account.api.email}"
}

# The console seals the connect links its Reconnect button makes (as operators do with
# `wapipe tenants connect-link`); it never opens a secret.
resource "google_kms_crypto_key_iam_member" "console_encrypts" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = "serviceAccount:${google_service_account.console.email}"
}

resource "google_kms_crypto_key_iam_member" "api_encrypts" {
  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = "serviceAccount:${google_service_account.api.email}"
}
