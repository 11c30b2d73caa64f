# The queues are defined once, in tasks/queues.yaml, which the code embeds (the emulator creates
# them, the worker reads max_attempts for dead letters). Every setting comes from that file; its
# field names are this resource's, and its durations ("5s") are what the resource expects.
resource "google_cloud_tasks_queue" "queue" {
  for_each = yamldecode(file("${path.module}/../tasks/queues.yaml")).queues

  project  = var.project_id
  location = local.tasks_location
  name     = each.key

  rate_limits {
    max_dispatches_per_second = each.value.rate_limits.max_dispatches_per_second
    max_concurrent_dispatches = each.value.rate_limits.max_concurrent_dispatches
  }

  retry_config {
    max_attempts       = each.value.retry_config.max_attempts
    min_backoff        = each.value.retry_config.min_backoff
    max_backoff        = each.value.retry_config.max_backoff
    max_doublings      = each.value.retry_config.max_doublings
    max_retry_duration = each.value.retry_config.max_retry_duration
  }

  stackdriver_logging_config {
    sampling_ratio = each.value.stackdriver_logging_config.sampling_ratio
  }

  depends_on = [google_project_service.api["cloudtasks.googleapis.com"]]
}

locals {
  # The queue ids the code relies on: tasks.InboundQueueID and tasks.OutboundQueueID.
  inbound_queue  = google_cloud_tasks_queue.queue["wa-inbound"]
  outbound_queue = google_cloud_tasks_queue.queue["wa-outbound"]
}
