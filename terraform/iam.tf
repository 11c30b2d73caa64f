# One identity per service, one for the OIDC tokens Cloud Tasks attaches, one for Cloud Build's
# deploys. Grants are on the resource they concern; the only project-wide ones are listed in
# local.runtime_project_roles, with the reason.

resource "google_service_account" "webhook" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-webhook"
  display_name = "wapipe webhook (Cloud Run)"
  description  = "Runs the public webhook service: Firestore dedupe markers, enqueues on the inbound queue."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

resource "google_service_account" "worker" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-worker"
  display_name = "wapipe worker (Cloud Run)"
  description  = "Runs the private worker service: Firestore records, enqueues on the outbound queue, calls the Graph API."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

resource "google_service_account" "api" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-api"
  display_name = "wapipe api (Cloud Run)"
  description  = "Runs the public business-facing api: API keys and send records in Firestore, enqueues on tenant queues, Embedded Signup."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

# Cloud Tasks mints OIDC tokens for this account on every task (TASKS_SERVICE_ACCOUNT_EMAIL); it is
# the only identity that may invoke the worker, and it can do nothing else.
resource "google_service_account" "tasks_invoker" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-invoker"
  display_name = "wapipe Cloud Tasks invoker"
  description  = "Identity of the OIDC tokens Cloud Tasks attaches to wapipe's tasks; may only invoke the worker."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

# The operators' console: reads every collection, writes its audit entries and the operators'
# changes (assign, close, a replay's reopened record), reads the queues and replays dead letters.
resource "google_service_account" "console" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-console"
  display_name = "wapipe operators' console (Cloud Run)"
  description  = "Runs the private console service: reads Firestore and queue stats, writes audit entries, replays dead letters."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

# Cloud Build runs cloudbuild.yaml as this account: push the image, deploy new revisions.
resource "google_service_account" "deployer" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-deployer"
  display_name = "wapipe deployer (Cloud Build)"
  description  = "Runs cloudbuild.yaml: pushes images and deploys revisions of the two services."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

locals {
  # Project-level roles of the runtime accounts, because nothing narrower exists: logs and traces
  # belong to the project.
  runtime_project_roles = merge([
    for service, email in local.runtime_service_accounts : {
      for role in ["roles/logging.logWriter", "roles/cloudtrace.agent"] :
      "${service}/${role}" => { member = "serviceAccount:${email}", role = role }
    }
  ]...)

  # Firestore data access is granted on the project, and a condition on the database name is the
  # only narrowing IAM offers (no collection can be named). So the data is split by who may see
  # it: the public webhook reaches only its own database (markers and payloads); the public api
  # only the main one; the worker (it reads payloads) and the console (it inspects markers) both.
  datastore_databases = {
    webhook = [google_firestore_database.inbound.name]
    worker  = [google_firestore_database.database.name, google_firestore_database.inbound.name]
    api     = [google_firestore_database.database.name]
    console = [google_firestore_database.database.name, google_firestore_database.inbound.name]
  }
}

resource "google_project_iam_member" "datastore" {
  for_each = local.datastore_databases

  project = var.project_id
  role    = "roles/datastore.user"
  member  = "serviceAccount:${local.runtime_service_accounts[each.key]}"

  condition {
    title       = "wapipe firestore databases"
    description = "Only the Firestore databases this service uses."
    expression  = join(" || ", [for db in each.value : "resource.name == \"projects/${var.project_id}/databases/${db}\""])
  }
}

# The worker's assistant calls Vertex AI Gemini (generateContent) with its own identity.
resource "google_project_iam_member" "worker_calls_vertex_ai" {
  project = var.project_id
  role    = "roles/aiplatform.user"
  member  = "serviceAccount:${google_service_account.worker.email}"
}

resource "google_project_iam_member" "runtime" {
  for_each = local.runtime_project_roles

  project = var.project_id
  role    = each.value.role
  member  = each.value.member
}

# Enqueueing: the webhook only on the inbound queue, the worker only on the outbound queue.
resource "google_cloud_tasks_queue_iam_member" "webhook_enqueues_inbound" {
  project  = var.project_id
  location = local.inbound_queue.location
  name     = local.inbound_queue.name
  role     = "roles/cloudtasks.enqueuer"
  member   = "serviceAccount:${google_service_account.webhook.email}"
}

resource "google_cloud_tasks_queue_iam_member" "worker_enqueues_outbound" {
  project  = var.project_id
  location = local.outbound_queue.location
  name     = local.outbound_queue.name
  role     = "roles/cloudtasks.enqueuer"
  member   = "serviceAccount:${google_service_account.worker.email}"
}

# The worker reads both queues' state and stats for its health report (GET /internal/health).
resource "google_cloud_tasks_queue_iam_member" "worker_views" {
  for_each = google_cloud_tasks_queue.queue

  project  = var.project_id
  location = each.value.location
  name     = each.value.name
  role     = "roles/cloudtasks.viewer"
  member   = "serviceAccount:${google_service_account.worker.email}"
}

# The console shows every queue's stats and inspects tasks (viewer), and replays dead letters onto
# the queue they died on (enqueuer), wapipe's own queues here and the tenants' below.
resource "google_cloud_tasks_queue_iam_member" "console_views" {
  for_each = google_cloud_tasks_queue.queue

  project  = var.project_id
  location = each.value.location
  name     = each.value.name
  role     = "roles/cloudtasks.viewer"
  member   = "serviceAccount:${google_service_account.console.email}"
}

resource "google_cloud_tasks_queue_iam_member" "console_replays" {
  for_each = google_cloud_tasks_queue.queue

  project  = var.project_id
  location = each.value.location
  name     = each.value.name
  role     = "roles/cloudtasks.enqueuer"
  member   = "serviceAccount:${google_service_account.console.email}"
}

# Creating a task that carries an OIDC token for the invoker account requires actAs on it
# (iam.serviceAccounts.actAs), so both enqueuers are users of that one account. The Cloud Tasks
# service agent mints the tokens with the role Google grants it when the API is enabled.
resource "google_service_account_iam_member" "enqueuer_acts_as_invoker" {
  for_each = local.runtime_service_accounts

  service_account_id = google_service_account.tasks_invoker.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${each.value}"
}

# The worker is invoked by the invoker account (tasks) and, for its tenant routes, by the api's
# and the console's accounts (Graph calls with a tenant's token, which they cannot open), and
# nothing else: no allUsers, no allAuthenticatedUsers, no project-level run.invoker anywhere.
resource "google_cloud_run_v2_service_iam_member" "worker_invoker" {
  project  = var.project_id
  location = google_cloud_run_v2_service.worker.location
  name     = google_cloud_run_v2_service.worker.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.tasks_invoker.email}"
}

resource "google_cloud_run_v2_service_iam_member" "worker_invoker_api" {
  project  = var.project_id
  location = google_cloud_run_v2_service.worker.location
  name     = google_cloud_run_v2_service.worker.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.api.email}"
}

resource "google_cloud_run_v2_service_iam_member" "worker_invoker_console" {
  project  = var.project_id
  location = google_cloud_run_v2_service.worker.location
  name     = google_cloud_run_v2_service.worker.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.console.email}"
}

# The console is private: only the members of var.console_invokers may invoke it (IAM on; no
# allUsers, no allAuthenticatedUsers).
resource "google_cloud_run_v2_service_iam_member" "console_invoker" {
  for_each = toset(var.console_invokers)

  project  = var.project_id
  location = google_cloud_run_v2_service.console.location
  name     = google_cloud_run_v2_service.console.name
  role     = "roles/run.invoker"
  member   = each.value
}

# The webhook is public: Meta calls it without Google credentials, and it authenticates every POST
# by X-Hub-Signature-256 itself.
resource "google_cloud_run_v2_service_iam_member" "webhook_public" {
  project  = var.project_id
  location = google_cloud_run_v2_service.webhook.location
  name     = google_cloud_run_v2_service.webhook.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

# The api is public: businesses call it with their API keys (checked by the service), and Meta's
# Embedded Signup redirects admins' browsers to it.
resource "google_cloud_run_v2_service_iam_member" "api_public" {
  project  = var.project_id
  location = google_cloud_run_v2_service.api.location
  name     = google_cloud_run_v2_service.api.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

# Deploys: the deployer pushes to the one repository, updates the two services (run.developer on
# each, which cannot change their IAM policies), deploys revisions that run as the runtime accounts,
# and writes its build logs (CLOUD_LOGGING_ONLY).
resource "google_artifact_registry_repository_iam_member" "deployer_pushes" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = "serviceAccount:${google_service_account.deployer.email}"
}

resource "google_cloud_run_v2_service_iam_member" "deployer_deploys" {
  for_each = {
    webhook = google_cloud_run_v2_service.webhook
    worker  = google_cloud_run_v2_service.worker
    api     = google_cloud_run_v2_service.api
    console = google_cloud_run_v2_service.console
  }

  project  = var.project_id
  location = each.value.location
  name     = each.value.name
  role     = "roles/run.developer"
  member   = "serviceAccount:${google_service_account.deployer.email}"
}

resource "google_service_account_iam_member" "deployer_acts_as_runtime" {
  for_each = {
    webhook = google_service_account.webhook.name
    worker  = google_service_account.worker.name
    api     = google_service_account.api.name
    console = google_service_account.console.name
  }

  service_account_id = each.value
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.deployer.email}"
}

resource "google_project_iam_member" "deployer_logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = "serviceAccount:${google_service_account.deployer.email}"
}
