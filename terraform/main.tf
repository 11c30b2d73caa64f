provider "google" {
  project = var.project_id
  region  = var.region

  default_labels = {
    app     = "wapipe"
    app_env = var.app_env
  }
}

provider "google-beta" {
  project = var.project_id
  region  = var.region

  default_labels = {
    app     = "wapipe"
    app_env = var.app_env
  }
}

# The project number is part of the worker's deterministic run.app URL.
data "google_project" "project" {
  project_id = var.project_id
}

locals {
  tasks_location     = coalesce(var.tasks_location, var.region)
  firestore_location = coalesce(var.firestore_location, var.region)

  webhook_service_name = "${var.name_prefix}-webhook"
  worker_service_name  = "${var.name_prefix}-worker"
  api_service_name     = "${var.name_prefix}-api"
  # The api's deterministic URL (PUBLIC_BASE_URL unless var.public_base_url names a custom domain):
  # connect links point at it and Meta redirects to its callback.
  api_url              = coalesce(var.public_base_url, "https://${local.api_service_name}-${data.google_project.project.number}.${var.region}.run.app")
  console_service_name = "${var.name_prefix}-console"

  # The worker's deterministic URL, https://SERVICE-PROJECT_NUMBER.REGION.run.app: known before the
  # service exists, so the worker can be given its own URL without a dependency cycle. Both services
  # must use this one string as INTERNAL_TASK_BASE_URL: it is also the OIDC audience the webhook
  # asks Cloud Tasks for and the audience the worker verifies (taskqueue.Audience), and the
  # service's `uri` attribute may be the other, hash-based run.app URL.
  worker_url = "https://${local.worker_service_name}-${data.google_project.project.number}.${var.region}.run.app"

  # The runtime identities, by service, for the grants the services share (iam.tf, secrets.tf).
  runtime_service_accounts = {
    webhook = google_service_account.webhook.email
    worker  = google_service_account.worker.email
    api     = google_service_account.api.email
    console = google_service_account.console.email
  }
}
