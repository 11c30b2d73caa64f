# The worker's sweep (POST /internal/sweep, package sweep): every minute, Cloud Scheduler runs
# the conversations whose lease expired with messages still in their inbox, ends the held
# unknown outcomes, probes the health report (the queue_stalled alert) and the periodic checks.
#
# The job carries an OIDC token for the scheduler's own account and no internal token: the worker
# admits the sweep outside dev on that verified identity alone (ROUTE_CALLERS, iam.tf), so no
# secret enters Terraform's state. Cloud Scheduler counts as internal traffic for the worker's
# ingress, and the scheduler's account may invoke the worker (iam.tf, worker_invoker).

resource "google_service_account" "scheduler" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-scheduler"
  display_name = "wapipe scheduler"
  description  = "Identity of the OIDC token Cloud Scheduler attaches to the worker's sweep; may only invoke the worker, on POST /internal/sweep."

  depends_on = [google_project_service.api["iam.googleapis.com"]]
}

resource "google_cloud_scheduler_job" "sweep" {
  project     = var.project_id
  region      = var.region
  name        = "${var.name_prefix}-sweep"
  description = "POST /internal/sweep on the worker every minute: stranded inboxes, held unknown outcomes, the health probe, periodic checks."
  schedule    = "* * * * *"
  time_zone   = "Etc/UTC"
  # A sweep runs well inside a minute; past two the next one has begun anyway. No retry_config:
  # Cloud Scheduler's default is no retry, and the next minute's run is the retry.
  attempt_deadline = "120s"

  http_target {
    http_method = "POST"
    uri         = "${local.worker_url}/internal/sweep"

    # The audience is the worker's URL without the path: the one its token check accepts
    # (taskqueue.Audience), as for the tasks.
    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = local.worker_url
    }
  }

  depends_on = [
    google_project_service.api["cloudscheduler.googleapis.com"],
    google_cloud_run_v2_service_iam_member.worker_invoker,
  ]
}
