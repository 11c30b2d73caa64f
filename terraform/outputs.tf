output "whatsapp_webhook_url" {
  description = "Callback URL to give Meta (App Dashboard > WhatsApp > Configuration), with the WHATSAPP_VERIFY_TOKEN secret's value as the verify token."
  value       = "${google_cloud_run_v2_service.webhook.uri}/webhooks/whatsapp"
}

output "webhook_service_uri" {
  description = "Base URL of the webhook service."
  value       = google_cloud_run_v2_service.webhook.uri
}

output "worker_url" {
  description = "The worker's deterministic run.app URL: INTERNAL_TASK_BASE_URL of both services and the audience of the tasks' OIDC tokens. Reachable only from Cloud Tasks in this project."
  value       = local.worker_url
}

output "worker_service_uri" {
  description = "The worker's URL as Cloud Run reports it (may be the hash-based run.app URL; both reach the same service)."
  value       = google_cloud_run_v2_service.worker.uri
}

output "queues" {
  description = "Full resource names of the Cloud Tasks queues, by queue id."
  value       = { for id, queue in google_cloud_tasks_queue.queue : id => queue.id }
}

output "tasks_location" {
  description = "Location of the Cloud Tasks queues (TASKS_LOCATION)."
  value       = local.tasks_location
}

output "service_accounts" {
  description = "Service account emails: the runtime identities (webhook, worker, api, console), each enqueuer's task invoker (invokers, by service: TASKS_SERVICE_ACCOUNT_EMAIL), the sweep's scheduler, and the Cloud Build deployer."
  value = {
    webhook   = google_service_account.webhook.email
    worker    = google_service_account.worker.email
    api       = google_service_account.api.email
    console   = google_service_account.console.email
    invokers  = { for service, sa in google_service_account.invoker : service => sa.email }
    scheduler = google_service_account.scheduler.email
    deployer  = google_service_account.deployer.email
  }
}

output "secret_ids" {
  description = "Secret Manager secret ids by environment variable: add the real values with gcloud secrets versions add."
  value       = { for env, secret in google_secret_manager_secret.secret : env => secret.secret_id }
}

output "image_repository" {
  description = "Artifact Registry path images are pushed to (cloudbuild.yaml's _REGION and _REPOSITORY)."
  value       = "${google_artifact_registry_repository.images.location}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}

output "kms_key_name" {
  description = "KMS_KEY_NAME: the Cloud KMS key that seals tenant secrets; give it to `wapipe tenants set-token` (env KMS_KEY_NAME)."
  value       = local.kms_key_name
}

output "connect_state_kms_key_name" {
  description = "CONNECT_STATE_KMS_KEY_NAME: the Cloud KMS key of connect links' states; give it to `wapipe tenants connect-link` (env CONNECT_STATE_KMS_KEY_NAME)."
  value       = local.connect_state_kms_key_name
}

output "api_url" {
  description = "The api service's URL (PUBLIC_BASE_URL): POST /v1/messages, and the Embedded Signup redirect URI to register with Meta (+ /integrations/meta/whatsapp/callback)."
  value       = local.api_url
}

output "console_url" {
  description = "URL of the operators' console (private: open it with gcloud run services proxy, as a member of var.console_invokers)."
  value       = google_cloud_run_v2_service.console.uri
}
