# The Cloud Run services, from one image (Dockerfile): the command picks the binary. Terraform owns
# their configuration; Cloud Build owns which image and revision serve (cloudbuild.yaml), hence the
# ignore_changes on image, traffic and the client fields gcloud stamps.

# The worker: private, invoked by Cloud Tasks, Cloud Scheduler (the sweep) and, on its tenant
# routes, the api and the console.
#
# Ingress is INGRESS_TRAFFIC_INTERNAL_ONLY ("internal + IAM" in the contract). Cloud Tasks delivers
# over the worker's public run.app URL, and Cloud Run counts requests from Cloud Tasks in the same
# project (or VPC Service Controls perimeter) as internal when they use the default run.app URL, not
# a custom domain: https://cloud.google.com/run/docs/securing/ingress lists Cloud Tasks among the
# products the "Internal" setting admits. So internal-only ingress blocks the internet and still
# lets the queues in, as long as the queues stay in this project and tasks target local.worker_url
# (a run.app URL). The api and the console call the worker's tenant routes (Graph calls that need
# a tenant's token, which only the worker can open) through the VPC (network.tf), which is what
# makes a call from another Cloud Run service internal. On top of ingress: IAM (run.invoker for the
# invokers, the scheduler's, the api's and the console's accounts), and in the code X-Internal-Token
# (but on the sweep), the verified token's account per route (ROUTE_CALLERS) and a task's queue.
resource "google_cloud_run_v2_service" "worker" {
  project             = var.project_id
  name                = local.worker_service_name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_INTERNAL_ONLY"
  deletion_protection = var.deletion_protection

  # The tasks' OIDC audience is local.worker_url. It is one of the service's run.app URLs already;
  # naming it as a custom audience keeps Cloud Run's IAM check accepting it whatever URL Cloud Run
  # reports as primary.
  custom_audiences = [local.worker_url]

  template {
    service_account                  = google_service_account.worker.email
    max_instance_request_concurrency = var.worker_concurrency

    scaling {
      min_instance_count = var.worker_min_instances
      max_instance_count = var.worker_max_instances
    }

    containers {
      image   = var.image
      command = ["/worker"]

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle          = true
        startup_cpu_boost = var.startup_cpu_boost
      }

      env {
        name  = "APP_ENV"
        value = var.app_env
      }
      env {
        name  = "GOOGLE_CLOUD_PROJECT"
        value = var.project_id
      }
      env {
        name  = "FIRESTORE_DATABASE"
        value = google_firestore_database.database.name
      }
      env {
        # The webhook's markers and payloads (firestore.tf).
        name  = "INBOUND_FIRESTORE_DATABASE"
        value = google_firestore_database.inbound.name
      }
      env {
        name  = "TASKS_LOCATION"
        value = local.tasks_location
      }
      env {
        name  = "OUTBOUND_TASK_QUEUE_NAME"
        value = local.outbound_queue.name
      }
      # The worker reports both queues' stats (GET /internal/health).
      env {
        name  = "INBOUND_TASK_QUEUE_NAME"
        value = local.inbound_queue.name
      }
      env {
        name  = "INTERNAL_TASK_BASE_URL"
        value = local.worker_url
      }
      env {
        # The worker's own invoker: the tasks it creates (replies, actions, notices) carry it.
        name  = "TASKS_SERVICE_ACCOUNT_EMAIL"
        value = google_service_account.invoker["worker"].email
      }
      env {
        # Who may call each route (tasks.Routes), written from the table (iam.tf): each
        # enqueuer's invoker on its task routes, the api's and the console's accounts on their
        # tenant routes, the scheduler's on the sweep. It replaces INTERNAL_CALLERS.
        name  = "ROUTE_CALLERS"
        value = jsonencode(local.route_callers_deployed)
      }
      env {
        # Cloud Run requires IAM on this service: it verifies each task's OIDC token itself and
        # forwards it with the signature removed, so the worker judges such a token on its claims.
        name  = "OIDC_VERIFIED_BY_PLATFORM"
        value = "true"
      }
      env {
        name  = "GRAPH_API_BASE_URL"
        value = var.graph_api_base_url
      }
      env {
        # Vertex AI region of the tenants' assistants (Gemini).
        name  = "LLM_LOCATION"
        value = var.llm_location
      }
      env {
        name  = "CONVERSATION_RETENTION"
        value = var.conversation_retention
      }
      env {
        # Tenant tokens are sealed under this key; the worker may only decrypt (kms.tf).
        name  = "KMS_KEY_NAME"
        value = local.kms_key_name
      }
      env {
        name  = "LOG_LEVEL"
        value = var.log_level
      }
      env {
        name  = "TRACE_SAMPLE_RATIO"
        value = tostring(var.trace_sample_ratio)
      }
      env {
        name = "INTERNAL_TASK_TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["INTERNAL_TASK_TOKEN"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "LOG_HASH_KEY"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["LOG_HASH_KEY"].secret_id
            version = "latest"
          }
        }
      }
      # The single-tenant default's token, only when there is one (var.single_tenant_default).
      dynamic "env" {
        for_each = var.single_tenant_default ? ["WHATSAPP_ACCESS_TOKEN"] : []
        content {
          name = env.value
          value_source {
            secret_key_ref {
              secret  = google_secret_manager_secret.secret[env.value].secret_id
              version = "latest"
            }
          }
        }
      }

      # Startup-only: 503 until the warm-up has opened and exercised the service's clients
      # (Firestore, Cloud Tasks, KMS), so no request pays the connection set-up. Up to Cloud
      # Run's cap of 240 s (period x threshold) for the warm-up's retries.
      startup_probe {
        http_get {
          path = "/startupz"
        }
        period_seconds    = 2
        timeout_seconds   = 1
        failure_threshold = 120
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
        period_seconds    = 30
        timeout_seconds   = 3
        failure_threshold = 3
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  lifecycle {
    ignore_changes = [
      template[0].containers[0].image,
      client,
      client_version,
      # cloudbuild.yaml with _TRAFFIC=tagged deploys with --no-traffic and a tag, then promotes.
      traffic,
    ]
  }

  depends_on = [
    google_project_service.api["run.googleapis.com"],
    google_secret_manager_secret_version.placeholder,
    google_secret_manager_secret_iam_member.reader,
  ]
}

# The webhook: public (Meta calls it), ingress from everywhere, unauthenticated at the IAM layer
# (iam.tf); it authenticates deliveries by their signature.
resource "google_cloud_run_v2_service" "webhook" {
  project             = var.project_id
  name                = local.webhook_service_name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = var.deletion_protection

  template {
    service_account                  = google_service_account.webhook.email
    max_instance_request_concurrency = var.webhook_concurrency

    scaling {
      min_instance_count = var.webhook_min_instances
      max_instance_count = var.webhook_max_instances
    }

    containers {
      image   = var.image
      command = ["/webhook"]

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle          = true
        startup_cpu_boost = var.startup_cpu_boost
      }

      env {
        name  = "APP_ENV"
        value = var.app_env
      }
      env {
        name  = "GOOGLE_CLOUD_PROJECT"
        value = var.project_id
      }
      env {
        name  = "FIRESTORE_DATABASE"
        value = google_firestore_database.database.name
      }
      env {
        # The webhook's markers and payloads (firestore.tf).
        name  = "INBOUND_FIRESTORE_DATABASE"
        value = google_firestore_database.inbound.name
      }
      env {
        name  = "TASKS_LOCATION"
        value = local.tasks_location
      }
      env {
        name  = "INBOUND_TASK_QUEUE_NAME"
        value = local.inbound_queue.name
      }
      env {
        name  = "INTERNAL_TASK_BASE_URL"
        value = local.worker_url
      }
      env {
        # Its own invoker (iam.tf): the worker admits it only on the webhook's routes.
        name  = "TASKS_SERVICE_ACCOUNT_EMAIL"
        value = google_service_account.invoker["webhook"].email
      }
      env {
        name  = "DEDUPE_TTL"
        value = var.dedupe_ttl
      }
      env {
        name  = "LOG_LEVEL"
        value = var.log_level
      }
      env {
        name  = "TRACE_SAMPLE_RATIO"
        value = tostring(var.trace_sample_ratio)
      }
      env {
        name = "INTERNAL_TASK_TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["INTERNAL_TASK_TOKEN"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "LOG_HASH_KEY"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["LOG_HASH_KEY"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "WHATSAPP_APP_SECRET"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["WHATSAPP_APP_SECRET"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "WHATSAPP_VERIFY_TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["WHATSAPP_VERIFY_TOKEN"].secret_id
            version = "latest"
          }
        }
      }

      # Startup-only: 503 until the warm-up has opened and exercised the service's clients
      # (Firestore, Cloud Tasks, KMS), so no request pays the connection set-up. Up to Cloud
      # Run's cap of 240 s (period x threshold) for the warm-up's retries.
      startup_probe {
        http_get {
          path = "/startupz"
        }
        period_seconds    = 2
        timeout_seconds   = 1
        failure_threshold = 120
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
        period_seconds    = 30
        timeout_seconds   = 3
        failure_threshold = 3
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  lifecycle {
    ignore_changes = [
      template[0].containers[0].image,
      client,
      client_version,
      # cloudbuild.yaml with _TRAFFIC=tagged deploys with --no-traffic and a tag, then promotes.
      traffic,
    ]
  }

  depends_on = [
    google_project_service.api["run.googleapis.com"],
    google_secret_manager_secret_version.placeholder,
    google_secret_manager_secret_iam_member.reader,
    # Deliveries become tasks for the worker at once: it exists, and can be invoked, first.
    google_cloud_run_v2_service_iam_member.worker_invoker,
    google_cloud_tasks_queue_iam_member.webhook_enqueues_inbound,
    google_service_account_iam_member.enqueuer_acts_as_invoker,
  ]
}

# The api: public (businesses call it with their API keys; Meta's Embedded Signup redirects
# admins' browsers to it), ingress from everywhere, unauthenticated at the IAM layer (iam.tf); it
# authenticates each call by its API key or its signed connect state.
resource "google_cloud_run_v2_service" "api" {
  project             = var.project_id
  name                = local.api_service_name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = var.deletion_protection

  template {
    service_account                  = google_service_account.api.email
    max_instance_request_concurrency = var.api_concurrency

    scaling {
      min_instance_count = 0
      max_instance_count = var.api_max_instances
    }

    # All egress through the VPC (network.tf): its calls to the worker's tenant routes are then
    # internal, as the worker's ingress requires.
    vpc_access {
      egress = "ALL_TRAFFIC"
      network_interfaces {
        network    = google_compute_network.wapipe.id
        subnetwork = google_compute_subnetwork.run_egress.id
      }
    }

    containers {
      image   = var.image
      command = ["/api"]

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle          = true
        startup_cpu_boost = var.startup_cpu_boost
      }

      env {
        name  = "APP_ENV"
        value = var.app_env
      }
      env {
        name  = "GOOGLE_CLOUD_PROJECT"
        value = var.project_id
      }
      env {
        name  = "FIRESTORE_DATABASE"
        value = google_firestore_database.database.name
      }
      env {
        name  = "TASKS_LOCATION"
        value = local.tasks_location
      }
      env {
        name  = "INTERNAL_TASK_BASE_URL"
        value = local.worker_url
      }
      env {
        # Its own invoker (iam.tf): the worker admits it only on the api's routes.
        name  = "TASKS_SERVICE_ACCOUNT_EMAIL"
        value = google_service_account.invoker["api"].email
      }
      env {
        name  = "GRAPH_API_BASE_URL"
        value = var.graph_api_base_url
      }
      env {
        # Embedded Signup seals the tokens it brings: encrypt only on this key (kms.tf).
        name  = "KMS_KEY_NAME"
        value = local.kms_key_name
      }
      env {
        # Connect links' states: the one key the api may decrypt with (kms.tf).
        name  = "CONNECT_STATE_KMS_KEY_NAME"
        value = local.connect_state_kms_key_name
      }
      env {
        name  = "META_APP_ID"
        value = var.meta_app_id
      }
      env {
        name  = "META_CONFIG_ID"
        value = var.meta_config_id
      }
      env {
        name  = "PUBLIC_BASE_URL"
        value = local.api_url
      }
      env {
        name  = "FACEBOOK_DIALOG_URL"
        value = var.facebook_dialog_url
      }
      env {
        name  = "LOG_LEVEL"
        value = var.log_level
      }
      env {
        name  = "TRACE_SAMPLE_RATIO"
        value = tostring(var.trace_sample_ratio)
      }
      env {
        name = "INTERNAL_TASK_TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["INTERNAL_TASK_TOKEN"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "LOG_HASH_KEY"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["LOG_HASH_KEY"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "WHATSAPP_APP_SECRET"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["WHATSAPP_APP_SECRET"].secret_id
            version = "latest"
          }
        }
      }

      # Startup-only: 503 until the warm-up has opened and exercised the service's clients
      # (Firestore, Cloud Tasks, KMS), so no request pays the connection set-up. Up to Cloud
      # Run's cap of 240 s (period x threshold) for the warm-up's retries.
      startup_probe {
        http_get {
          path = "/startupz"
        }
        period_seconds    = 2
        timeout_seconds   = 1
        failure_threshold = 120
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
        period_seconds    = 30
        timeout_seconds   = 3
        failure_threshold = 3
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  lifecycle {
    ignore_changes = [
      template[0].containers[0].image,
      client,
      client_version,
      traffic,
    ]
  }

  depends_on = [
    google_project_service.api["run.googleapis.com"],
    google_secret_manager_secret_version.placeholder,
    google_secret_manager_secret_iam_member.reader,
    google_cloud_run_v2_service_iam_member.worker_invoker,
    google_project_iam_member.api_enqueues_tenant_queues,
    google_service_account_iam_member.enqueuer_acts_as_invoker,
  ]
}

# The operators' console: private. Ingress is open so that `gcloud run services proxy` (from an
# operator's machine) and IAP can reach it, and IAM is required: only var.console_invokers have
# run.invoker (iam.tf), no allUsers. The operator is whoever a verified credential names: IAP's
# signed header when IAP fronts it (IAP_AUDIENCE), else the ID token Cloud Run's IAM check
# accepted (OIDC_VERIFIED_BY_PLATFORM); never a header alone (internal/identity).
resource "google_cloud_run_v2_service" "console" {
  project             = var.project_id
  name                = local.console_service_name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = var.deletion_protection

  template {
    service_account                  = google_service_account.console.email
    max_instance_request_concurrency = 20

    scaling {
      min_instance_count = 0
      max_instance_count = 2
    }

    # All egress through the VPC (network.tf): its calls to the worker's tenant routes are then
    # internal, as the worker's ingress requires.
    vpc_access {
      egress = "ALL_TRAFFIC"
      network_interfaces {
        network    = google_compute_network.wapipe.id
        subnetwork = google_compute_subnetwork.run_egress.id
      }
    }

    containers {
      image   = var.image
      command = ["/console"]

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        cpu_idle          = true
        startup_cpu_boost = var.startup_cpu_boost
      }

      env {
        name  = "APP_ENV"
        value = var.app_env
      }
      env {
        name  = "GOOGLE_CLOUD_PROJECT"
        value = var.project_id
      }
      env {
        name  = "FIRESTORE_DATABASE"
        value = google_firestore_database.database.name
      }
      env {
        # The webhook's markers and payloads (firestore.tf).
        name  = "INBOUND_FIRESTORE_DATABASE"
        value = google_firestore_database.inbound.name
      }
      env {
        name  = "TASKS_LOCATION"
        value = local.tasks_location
      }
      # The health report watches both queues.
      env {
        name  = "INBOUND_TASK_QUEUE_NAME"
        value = local.inbound_queue.name
      }
      env {
        name  = "OUTBOUND_TASK_QUEUE_NAME"
        value = local.outbound_queue.name
      }
      env {
        # Reconnect makes Embedded Signup links to the api, sealed under the connect states' key.
        name  = "PUBLIC_BASE_URL"
        value = local.api_url
      }
      env {
        name  = "CONNECT_STATE_KMS_KEY_NAME"
        value = local.connect_state_kms_key_name
      }
      # Operators are verified, never named by a header: Cloud Run's IAM check verifies each
      # request's ID token and forwards it with its signature removed, and the console judges its
      # claims (internal/identity). Its hosts are its run.app names (K_SERVICE, set by Cloud Run);
      # behind IAP, also set IAP_AUDIENCE and the domain in CONSOLE_HOSTS.
      env {
        name  = "OIDC_VERIFIED_BY_PLATFORM"
        value = "true"
      }
      # `gcloud run services proxy` sends a user's ID token minted for gcloud's OAuth clients (the
      # CLI's and application-default credentials'), not for the service URL.
      env {
        name  = "CONSOLE_ID_TOKEN_AUDIENCES"
        value = "32555940559.apps.googleusercontent.com,764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com"
      }
      # A replay creates the task wapipe replay would: to the worker, with its token and OIDC.
      env {
        name  = "INTERNAL_TASK_BASE_URL"
        value = local.worker_url
      }
      env {
        # Its own invoker (iam.tf): the worker admits it only on the console's routes.
        name  = "TASKS_SERVICE_ACCOUNT_EMAIL"
        value = google_service_account.invoker["console"].email
      }
      env {
        # A replay acts as the route's own enqueuer (iam.tf, local.replay_invokers).
        name  = "REPLAY_INVOKERS"
        value = jsonencode(local.replay_invokers)
      }
      env {
        name  = "LOG_LEVEL"
        value = var.log_level
      }
      env {
        name  = "TRACE_SAMPLE_RATIO"
        value = tostring(var.trace_sample_ratio)
      }
      env {
        name = "INTERNAL_TASK_TOKEN"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["INTERNAL_TASK_TOKEN"].secret_id
            version = "latest"
          }
        }
      }
      env {
        name = "LOG_HASH_KEY"
        value_source {
          secret_key_ref {
            secret  = google_secret_manager_secret.secret["LOG_HASH_KEY"].secret_id
            version = "latest"
          }
        }
      }

      # Startup-only: 503 until the warm-up has opened and exercised the service's clients
      # (Firestore, Cloud Tasks, KMS), so no request pays the connection set-up. Up to Cloud
      # Run's cap of 240 s (period x threshold) for the warm-up's retries.
      startup_probe {
        http_get {
          path = "/startupz"
        }
        period_seconds    = 2
        timeout_seconds   = 1
        failure_threshold = 120
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
        period_seconds    = 30
        timeout_seconds   = 3
        failure_threshold = 3
      }
    }
  }

  traffic {
    type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
    percent = 100
  }

  lifecycle {
    ignore_changes = [
      template[0].containers[0].image,
      client,
      client_version,
      traffic,
    ]
  }

  depends_on = [
    google_project_service.api["run.googleapis.com"],
    google_secret_manager_secret_version.placeholder,
    google_secret_manager_secret_iam_member.reader,
  ]
}
