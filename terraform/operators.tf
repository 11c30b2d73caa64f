# The people or CI identities that run `wapipe tenants apply` and `set-token` (var.operators).
#   - apply writes tenants (Firestore) and creates or updates each tenant's send queue;
#   - set-token and action-secret seal with the tenant secrets' key, connect-link with the connect
#     states' key (encrypt only: operators cannot read a secret back).
# queueAdmin and datastore.user are project-level: tenant queues are created after Terraform runs,
# so there is no queue resource to grant on, and Firestore access is granted on the project.
locals {
  operator_project_roles = {
    for pair in setproduct(var.operators, ["roles/cloudtasks.queueAdmin", "roles/datastore.user"]) :
    "${pair[0]}/${pair[1]}" => { member = pair[0], role = pair[1] }
  }
}

resource "google_project_iam_member" "operators" {
  for_each = local.operator_project_roles

  project = var.project_id
  role    = each.value.role
  member  = each.value.member
}

# Operators seal (set-token, action-secret, connect-link) and never open: encrypt only, on each
# key. var.operators is best a group, so that people come and go without a Terraform run.
resource "google_kms_crypto_key_iam_member" "operators_encrypt" {
  for_each = toset(var.operators)

  crypto_key_id = google_kms_crypto_key.tenant_secrets.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = each.value
}

resource "google_kms_crypto_key_iam_member" "operators_seal_connect_states" {
  for_each = toset(var.operators)

  crypto_key_id = google_kms_crypto_key.connect_states.id
  role          = "roles/cloudkms.cryptoKeyEncrypter"
  member        = each.value
}

# The console reads the tenants' send queues (depth on the tenants page) and replays their dead
# letters: the same condition, viewer and enqueuer.
resource "google_project_iam_member" "console_tenant_queues" {
  for_each = toset(["roles/cloudtasks.viewer", "roles/cloudtasks.enqueuer"])

  project = var.project_id
  role    = each.value
  member  = "serviceAccount:${google_service_account.console.email}"

  condition {
    title       = "wapipe tenant queues"
    description = "Only the tenants' send queues (wa-out-<tenant id>)."
    expression  = "resource.name.startsWith(\"projects/${var.project_id}/locations/${local.tasks_location}/queues/wa-out-\")"
  }
}

# The worker enqueues replies on tenant queues (tasks.TenantQueuePrefix + tenant id) that apply
# creates later, so the grant is on the project, narrowed by an IAM condition to those queues.
resource "google_project_iam_member" "api_enqueues_tenant_queues" {
  project = var.project_id
  role    = "roles/cloudtasks.enqueuer"
  member  = "serviceAccount:${google_service_account.api.email}"

  condition {
    title       = "wapipe tenant queues"
    description = "Only the tenants' send queues (wa-out-<tenant id>): POST /v1/messages and releases."
    expression  = "resource.name.startsWith(\"projects/${var.project_id}/locations/${local.tasks_location}/queues/wa-out-\")"
  }
}

resource "google_project_iam_member" "worker_enqueues_tenant_queues" {
  project = var.project_id
  role    = "roles/cloudtasks.enqueuer"
  member  = "serviceAccount:${google_service_account.worker.email}"

  condition {
    title       = "wapipe tenant queues"
    description = "Only the tenants' send queues (wa-out-<tenant id>)."
    expression  = "resource.name.startsWith(\"projects/${var.project_id}/locations/${local.tasks_location}/queues/wa-out-\")"
  }
}

# The worker's health report (GET /internal/health) reads each tenant's send queue by name, with
# the same condition.
resource "google_project_iam_member" "worker_views_tenant_queues" {
  project = var.project_id
  role    = "roles/cloudtasks.viewer"
  member  = "serviceAccount:${google_service_account.worker.email}"

  condition {
    title       = "wapipe tenant queues"
    description = "Only the tenants' send queues (wa-out-<tenant id>): their backlog in the health report."
    expression  = "resource.name.startsWith(\"projects/${var.project_id}/locations/${local.tasks_location}/queues/wa-out-\")"
  }
}
