locals {
  # The secrets the services read, by environment variable, with the services that may read each.
  # A service is granted access to exactly the secrets listed for it here, and services.tf sets
  # the same variables from Secret Manager (terraform_test.go checks that they agree).
  secret_readers = merge({
    # The api exchanges Embedded Signup codes with the app secret.
    WHATSAPP_APP_SECRET   = ["webhook", "api"]
    WHATSAPP_VERIFY_TOKEN = ["webhook"]
    # The console replays dead letters: its tasks carry the token like the others.
    INTERNAL_TASK_TOKEN = ["webhook", "worker", "api", "console"]
    # One key for every service, so the refs in their logs match (CONTRACT.md, Logs).
    LOG_HASH_KEY = ["webhook", "worker", "api", "console"]
    },
    # The single-tenant default's token, only when there is one (var.single_tenant_default).
    { for env, readers in { WHATSAPP_ACCESS_TOKEN = ["worker"] } : env => readers if var.single_tenant_default },
  )

  secret_grants = merge([
    for env, readers in local.secret_readers : {
      for reader in readers : "${env}/${reader}" => { env = env, reader = reader }
    }
  ]...)
}

# Secret ids are <prefix>-<variable in kebab case>, e.g. wapipe-whatsapp-app-secret.
resource "google_secret_manager_secret" "secret" {
  for_each = local.secret_readers

  project   = var.project_id
  secret_id = "${var.name_prefix}-${lower(replace(each.key, "_", "-"))}"

  replication {
    auto {}
  }

  depends_on = [google_project_service.api["secretmanager.googleapis.com"]]
}

# A first version, so that the secret exists with a version Cloud Run can reference. Its value is
# a placeholder that every service refuses outside dev (internal/config: a value beginning with
# "placeholder" stops the service at start-up, naming the variable), so a forgotten secret cannot
# run in production as a publicly known string. The real values are added out of band, before the
# services are created (README.md, First deployment), so they never enter Terraform state:
#
#   printf %s "$VALUE" | gcloud secrets versions add wapipe-whatsapp-app-secret --data-file=-
#
# The services read "latest", resolved when an instance starts: redeploy (or wait for instances to
# turn over) after adding a version. Terraform ignores this version's value and state, so
# rotating, or disabling the placeholder, is never undone.
resource "google_secret_manager_secret_version" "placeholder" {
  for_each = google_secret_manager_secret.secret

  secret      = each.value.id
  secret_data = "placeholder-${lower(each.key)}-replace-with-gcloud-secrets-versions-add"

  lifecycle {
    ignore_changes = [secret_data, enabled]
  }
}

# Each runtime service account may read only the secrets its service reads.
resource "google_secret_manager_secret_iam_member" "reader" {
  for_each = local.secret_grants

  project   = var.project_id
  secret_id = google_secret_manager_secret.secret[each.value.env].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${local.runtime_service_accounts[each.value.reader]}"
}
