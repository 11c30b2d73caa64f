# One identity per service, one invoker per service that creates tasks (the OIDC tokens Cloud
# Tasks attaches), the scheduler's (scheduler.tf), one for Cloud Build's deploys. Grants are on
# the resource they concern; the only project-wide ones are listed in
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

# Each service that creates tasks for the worker does so as its own invoker account
# (TASKS_SERVICE_ACCOUNT_EMAIL): Cloud Tasks mints an OIDC token for it on each of its tasks, and
# the worker admits that account only on the routes tasks.Routes gives the service
# (ROUTE_CALLERS, below), so code running as the api cannot post Meta events to process_inbound.
# Each may only invoke the worker, and only its own service may act as it.
resource "google_service_account" "invoker" {
  for_each = toset(local.enqueuers)

  project = var.project_id
  # The worker's keeps the id of the former single invoker (moved below), whose tokens the tasks
  # queued before the split still carry.
  account_id   = each.key == "worker" ? "${var.name_prefix}-invoker" : "${var.name_prefix}-inv-${each.key}"
  display_name = "wapipe ${each.key} task invoker"
  description  = "Identity of the OIDC tokens on the tasks the ${each.key} creates; may only invoke the worker, on the ${each.key}'s routes."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

# The single invoker every enqueuer used is the worker's now: the same account, so a deployment
# keeps it (and its tasks in flight) across the apply; the others are new accounts.
moved {
  from = google_service_account.tasks_invoker
  to   = google_service_account.invoker["worker"]
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
  # The services that create tasks for the worker, each as its own invoker.
  enqueuers = ["webhook", "api", "console", "worker"]

  # ROUTE_CALLERS, route by route of tasks.Routes (tasks/routes.go): a task route admits the
  # invoker accounts of the services that enqueue it, a tenant route (and health) the own
  # accounts of the services that call it directly, the sweep the scheduler's.
  # terraform/routes_test.go checks this against the Go table.
  route_callers = {
    "/internal/process_inbound"  = [google_service_account.invoker["webhook"].email]
    "/internal/process_outbound" = [google_service_account.invoker["worker"].email]
    "/internal/process_action"   = [google_service_account.invoker["worker"].email]
    "/internal/process_send" = [
      google_service_account.invoker["api"].email,
      google_service_account.invoker["console"].email,
      google_service_account.invoker["worker"].email,
    ]
    "/internal/health"                               = [google_service_account.console.email]
    "/internal/sweep"                                = [google_service_account.scheduler.email]
    "/internal/tenants/{tenant_id}/media/{media_id}" = [google_service_account.console.email]
    "/internal/tenants/{tenant_id}/media"            = [google_service_account.api.email]
    "/internal/tenants/{tenant_id}/templates"        = [google_service_account.api.email]
    "/internal/tenants/{tenant_id}/templates/{name}" = [google_service_account.api.email]
  }

  # REPLAY_INVOKERS (the console's): a replay of a task route's dead letter acts as the route's
  # own enqueuer, the one ROUTE_CALLERS admits there; the console's own on process_send
  # (tasks.ReplayInvokersOf; terraform/routes_test.go checks they agree).
  replay_invokers = {
    "/internal/process_inbound"  = google_service_account.invoker["webhook"].email
    "/internal/process_outbound" = google_service_account.invoker["worker"].email
    "/internal/process_action"   = google_service_account.invoker["worker"].email
    "/internal/process_send"     = google_service_account.invoker["console"].email
  }

  # What the worker is given: during the split of the single invoker (var.admit_previous_invoker)
  # the former account, now the worker's, is admitted on every task route too, so that the tasks
  # queued before the apply, which carry it, still run.
  route_callers_deployed = {
    for path, emails in local.route_callers : path => (
      var.admit_previous_invoker && startswith(path, "/internal/process_")
      ? distinct(concat(emails, [google_service_account.invoker["worker"].email]))
      : emails
    )
  }

  # The accounts whose tokens invoke the worker from Cloud Tasks and Cloud Scheduler.
  worker_token_invokers = merge(
    { for service, sa in google_service_account.invoker : service => sa.email },
    { scheduler = google_service_account.scheduler.email },
  )

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

# Creating a task that carries an OIDC token for an invoker account requires actAs on it
# (iam.serviceAccounts.actAs), so each enqueuer is a user of its own invoker and of no other's.
# actAs lets it name the account on a task, not sign for it: only the Cloud Tasks service agent
# mints the tokens, with the role Google grants it when the API is enabled.
resource "google_service_account_iam_member" "enqueuer_acts_as_invoker" {
  for_each = local.runtime_service_accounts

  service_account_id = google_service_account.invoker[each.key].name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${each.value}"
}

# The console replays dead letters (an operator's choice, audited) as the route's own enqueuer:
# it may also act as the webhook's and the worker's invokers, for their routes' replays
# (REPLAY_INVOKERS). The worker's check keeps each replay to the route its account may call.
resource "google_service_account_iam_member" "console_replays_as" {
  for_each = toset(["webhook", "worker"])

  service_account_id = google_service_account.invoker[each.key].name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${google_service_account.console.email}"
}

# The worker is invoked by the invokers (tasks) and the scheduler (the sweep) and, for its tenant
# routes, by the api's and the console's accounts (Graph calls with a tenant's token, which they
# cannot open), and nothing else: no allUsers, no allAuthenticatedUsers, no project-level
# run.invoker anywhere. Which route each may call is the worker's check (ROUTE_CALLERS).
resource "google_cloud_run_v2_service_iam_member" "worker_invoker" {
  for_each = local.worker_token_invokers

  project  = var.project_id
  location = google_cloud_run_v2_service.worker.location
  name     = google_cloud_run_v2_service.worker.name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${each.value}"
}

moved {
  from = google_cloud_run_v2_service_iam_member.worker_invoker
  to   = google_cloud_run_v2_service_iam_member.worker_invoker["worker"]
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
