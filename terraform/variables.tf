variable "project_id" {
  description = "Google Cloud project that hosts wapipe: both Cloud Run services, the Cloud Tasks queues, Firestore and the secrets."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project id (6 to 30 lowercase letters, digits and hyphens), not a project number or name."
  }
}

variable "region" {
  description = "Region of the Cloud Run services and the Artifact Registry repository, e.g. us-central1."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a Google Cloud region such as us-central1."
  }
}

variable "tasks_location" {
  description = "Location of the Cloud Tasks queues (TASKS_LOCATION); null means the same as region. The queues must stay in this project: Cloud Tasks reaches the internal-only worker only from its own project."
  type        = string
  default     = null

  validation {
    condition     = var.tasks_location == null || can(regex("^[a-z]+-[a-z]+[0-9]+$", var.tasks_location))
    error_message = "tasks_location must be a Google Cloud region such as us-central1, or null."
  }
}

variable "firestore_location" {
  description = "Location of the Firestore database (a region such as us-central1, or a multi-region such as nam5); null means the same as region. Fixed once the database exists."
  type        = string
  default     = null
}

variable "firestore_database" {
  description = "Firestore database id (FIRESTORE_DATABASE)."
  type        = string
  default     = "(default)"

  validation {
    condition     = var.firestore_database == "(default)" || can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.firestore_database))
    error_message = "firestore_database must be \"(default)\" or a database id of 4 to 63 lowercase letters, digits and hyphens."
  }
}

variable "inbound_firestore_database" {
  description = "Firestore database of the webhook's dedupe markers and out-of-band payloads (INBOUND_FIRESTORE_DATABASE, collections inbound_events and payload_chunks): the only database the public webhook may reach. Must differ from firestore_database."
  type        = string
  default     = "wapipe-inbound"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.inbound_firestore_database))
    error_message = "inbound_firestore_database must be a database id of 4 to 63 lowercase letters, digits and hyphens."
  }
}

variable "name_prefix" {
  description = "Prefix of every named resource: Cloud Run services <prefix>-webhook and <prefix>-worker, service accounts, secrets, the image repository. cloudbuild.yaml's _WEBHOOK_SERVICE and _WORKER_SERVICE must match."
  type        = string
  default     = "wapipe"

  validation {
    # 16 keeps <prefix>-deployer within the 30 characters of a service account id.
    condition     = can(regex("^[a-z][a-z0-9]*(-[a-z0-9]+)*$", var.name_prefix)) && length(var.name_prefix) <= 16
    error_message = "name_prefix must be at most 16 lowercase letters, digits and single hyphens, starting with a letter."
  }
}

variable "image" {
  description = "Container image both services start from when Terraform creates them, e.g. us-central1-docker.pkg.dev/PROJECT/wapipe/wapipe:SHA. Later images are deployed by Cloud Build (cloudbuild.yaml); Terraform ignores image changes."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9.-]+(:[0-9]+)?/[^\\s]+$", var.image))
    error_message = "image must be a full image reference such as us-central1-docker.pkg.dev/PROJECT/wapipe/wapipe:TAG."
  }
}

variable "app_env" {
  description = "APP_ENV of both services: dev, staging or prod. prod is the strictest (https only, dedupe fails closed)."
  type        = string
  default     = "prod"

  validation {
    condition     = contains(["dev", "staging", "prod"], var.app_env)
    error_message = "app_env must be dev, staging or prod."
  }
}

variable "single_tenant_default" {
  description = "Whether the worker serves numbers no tenant owns with a default token (WHATSAPP_ACCESS_TOKEN, from its own secret). false for a deployment of tenants only: there is then no such secret to fill in, and such messages are recorded and logged, not answered. Every service refuses a secret left at its placeholder, so a secret nobody would fill must not exist."
  type        = bool
  default     = true
}

variable "graph_api_base_url" {
  description = "GRAPH_API_BASE_URL of the worker: the versioned Graph API base. Keep it equal to worker.DefaultGraphAPIBaseURL unless moving Graph API versions deliberately."
  type        = string
  default     = "https://graph.facebook.com/v24.0"

  validation {
    condition     = can(regex("^https://[^\\s/]+(/[^\\s]*)?$", var.graph_api_base_url))
    error_message = "graph_api_base_url must be an https URL."
  }
}

variable "dedupe_ttl" {
  description = "DEDUPE_TTL of the webhook: how long a delivery's dedupe marker is kept, as a Go duration. Meta retries for up to 7 days."
  type        = string
  default     = "168h"

  validation {
    condition     = can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", var.dedupe_ttl))
    error_message = "dedupe_ttl must be a Go duration such as 168h."
  }
}

variable "log_level" {
  description = "LOG_LEVEL of both services: DEBUG, INFO, WARNING or ERROR."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be DEBUG, INFO, WARNING or ERROR."
  }
}

variable "trace_sample_ratio" {
  description = "TRACE_SAMPLE_RATIO of both services: the share of requests traced to Cloud Trace, from 0 to 1."
  type        = number
  default     = 1

  validation {
    condition     = var.trace_sample_ratio >= 0 && var.trace_sample_ratio <= 1
    error_message = "trace_sample_ratio must be between 0 and 1."
  }
}

variable "webhook_min_instances" {
  description = "Minimum instances of the webhook. 1 keeps a warm instance so Meta's deliveries don't wait on a cold start (the target is p95 well under 200 ms)."
  type        = number
  default     = 1

  validation {
    condition     = var.webhook_min_instances >= 0 && floor(var.webhook_min_instances) == var.webhook_min_instances
    error_message = "webhook_min_instances must be a whole number >= 0."
  }
}

variable "webhook_max_instances" {
  description = "Maximum instances of the webhook (must be >= webhook_min_instances)."
  type        = number
  default     = 20

  validation {
    condition     = var.webhook_max_instances >= 1 && floor(var.webhook_max_instances) == var.webhook_max_instances
    error_message = "webhook_max_instances must be a whole number >= 1."
  }
}

variable "webhook_concurrency" {
  description = "Requests one webhook instance serves at once (max_instance_request_concurrency)."
  type        = number
  default     = 80

  validation {
    condition     = var.webhook_concurrency >= 1 && var.webhook_concurrency <= 1000
    error_message = "webhook_concurrency must be between 1 and 1000."
  }
}

variable "worker_min_instances" {
  description = "Minimum instances of the worker. 0 is fine: Cloud Tasks retries and absorbs cold starts."
  type        = number
  default     = 0

  validation {
    condition     = var.worker_min_instances >= 0 && floor(var.worker_min_instances) == var.worker_min_instances
    error_message = "worker_min_instances must be a whole number >= 0."
  }
}

variable "worker_max_instances" {
  description = "Maximum instances of the worker (must be >= worker_min_instances). The queues' max_concurrent_dispatches in tasks/queues.yaml bound the load it sees."
  type        = number
  default     = 20

  validation {
    condition     = var.worker_max_instances >= 1 && floor(var.worker_max_instances) == var.worker_max_instances
    error_message = "worker_max_instances must be a whole number >= 1."
  }
}

variable "worker_concurrency" {
  description = "Requests (tasks) one worker instance serves at once (max_instance_request_concurrency)."
  type        = number
  default     = 80

  validation {
    condition     = var.worker_concurrency >= 1 && var.worker_concurrency <= 1000
    error_message = "worker_concurrency must be between 1 and 1000."
  }
}

variable "startup_cpu_boost" {
  description = "Give both services extra CPU while an instance starts, to shorten cold starts."
  type        = bool
  default     = true
}

variable "cpu" {
  description = "CPU limit of each instance of either service."
  type        = string
  default     = "1"

  validation {
    condition     = contains(["1", "2", "4", "6", "8"], var.cpu)
    error_message = "cpu must be 1, 2, 4, 6 or 8."
  }
}

variable "memory" {
  description = "Memory limit of each instance of either service, e.g. 512Mi. The webhook holds request bodies of up to 4 MiB."
  type        = string
  default     = "512Mi"

  validation {
    condition     = can(regex("^[0-9]+(Mi|Gi)$", var.memory))
    error_message = "memory must be a quantity such as 512Mi or 1Gi."
  }
}

variable "deletion_protection" {
  description = "Refuse to destroy the Cloud Run services from Terraform. Turn off only to tear an environment down."
  type        = bool
  default     = true
}

variable "console_invokers" {
  description = "IAM members (user:…, group:…) who may open the operators' console (run.invoker on the console service, e.g. through `gcloud run services proxy wapipe-console`). Empty: nobody until granted."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for m in var.console_invokers : can(regex("^(user|group|serviceAccount|domain|principal|principalSet):", m))])
    error_message = "console_invokers must be IAM members such as user:alice@example.com or group:ops@example.com."
  }
}

variable "operators" {
  description = "IAM members (user:…, group:…, serviceAccount:… of a CI pipeline) allowed to run `wapipe tenants apply` and `set-token`: Cloud Tasks queue admin and Firestore user on the project, encrypt-only on the tenant secrets key."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for m in var.operators : can(regex("^(user|group|serviceAccount|domain|principal|principalSet):", m))])
    error_message = "operators must be IAM members such as user:alice@example.com or serviceAccount:ci@p.iam.gserviceaccount.com."
  }
}

variable "meta_app_id" {
  description = "META_APP_ID of the api: the Meta app of Embedded Signup. Empty disables the connect routes."
  type        = string
  default     = ""
}

variable "meta_config_id" {
  description = "META_CONFIG_ID of the api: the Embedded Signup configuration id."
  type        = string
  default     = ""
}

variable "public_base_url" {
  description = "PUBLIC_BASE_URL of the api (a custom domain); empty means its run.app URL."
  type        = string
  default     = ""
}

variable "facebook_dialog_url" {
  description = "FACEBOOK_DIALOG_URL of the api: Meta's OAuth dialog."
  type        = string
  default     = "https://www.facebook.com/v24.0/dialog/oauth"
}

variable "api_concurrency" {
  description = "Concurrent requests per api instance."
  type        = number
  default     = 80
}

variable "api_max_instances" {
  description = "Maximum api instances."
  type        = number
  default     = 10
}

variable "llm_location" {
  description = "LLM_LOCATION of the worker: the Vertex AI region its assistants call Gemini in."
  type        = string
  default     = "us-central1"
}

variable "conversation_retention" {
  description = "CONVERSATION_RETENTION of the worker: how long conversations, their messages and actions are kept after the last message (a Go duration, at least 1h)."
  type        = string
  default     = "2160h"
}

variable "alert_notification_channels" {
  description = "Cloud Monitoring notification channels (projects/PROJECT/notificationChannels/ID) the alert policies notify; empty: the incidents open in Cloud Monitoring without notifying anyone."
  type        = list(string)
  default     = []
}

variable "run_egress_cidr" {
  description = "IP range of the subnet the api's and the console's Direct VPC egress uses (network.tf); a /26 or larger, unused in the project's network."
  type        = string
  default     = "10.8.0.0/26"

  validation {
    condition     = can(cidrhost(var.run_egress_cidr, 0)) && tonumber(split("/", var.run_egress_cidr)[1]) <= 26
    error_message = "run_egress_cidr must be an IPv4 CIDR range of /26 or larger."
  }
}

variable "admit_previous_invoker" {
  description = "true only for the first apply on a deployment made before each enqueuer had its own invoker account: the worker also admits the former single invoker (now the worker's) on every task route, so the tasks queued before the apply still run. Set it back to false once no task in the queues is older than that apply (wapipe health: every queue's oldest task)."
  type        = bool
  default     = false
}
