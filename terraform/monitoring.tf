# Log-based metrics and the alert policies on them. The filters match the worker's log lines by
# their event name and severity (the code's slog JSON: jsonPayload.event, severity), so an
# operator is told when something stops a tenant's messaging without reading the logs.

# The alert conditions: the contract's five ("Notifications and alerts") and a restricted
# account, each a log-based metric over the worker's lines with that event (and the terms
# listed) and an alert policy that opens an incident on the first such line in five minutes.
# terraform/alerts_test.go checks that every event named here is one the Go code logs.
locals {
  log_alerts = {
    # internal/events: Meta restricted, disabled or removed a tenant's WhatsApp Business Account
    # (account_update at ERROR; a lifted restriction is a WARNING and does not count).
    account_restricted = {
      title       = "WhatsApp Business Account restricted"
      description = "A tenant's WhatsApp Business Account restricted, disabled or removed by Meta (account_update at ERROR)."
      terms       = ["jsonPayload.event=\"account_update\"", "severity=\"ERROR\""]
      doc         = "Meta restricted, disabled or removed a tenant's WhatsApp Business Account: its messaging is stopped. `wapipe health` names the tenant (restricted_accounts) and `wapipe tenants show ID` says what Meta reported."
    }
    # internal/worker/deadletter.go: a task still failing on its last attempt, kept in dead_letters.
    dead_letters = {
      title       = "dead letters written"
      description = "A task failed on its last attempt and was written to dead_letters (dead_lettered at ERROR)."
      terms       = ["jsonPayload.event=\"dead_lettered\"", "severity=\"ERROR\""]
      doc         = "A task failed on its last attempt and was kept in `dead_letters`: `wapipe health` counts them (dead_letters_pending); `wapipe inspect` shows one; fix the cause, then `wapipe replay`."
    }
    # internal/delivery/send.go: Graph refused the tenant's token; its sends are parked.
    tenants_needing_reauth = {
      title       = "tenant needs a new access token"
      description = "Graph refused a tenant's access token: its sends are parked (tenant_needs_reauth at ERROR)."
      terms       = ["jsonPayload.event=\"tenant_needs_reauth\"", "severity=\"ERROR\""]
      doc         = "Graph refused a tenant's access token: its sends wait as `parked`. `wapipe health` names the tenant (tenants_needing_reauth); set a new token with `wapipe tenants set-token ID` or send its admin `wapipe tenants connect-link ID`: the parked sends then go, each once."
    }
    # internal/fanout/fanout.go: a delivery status "failed" applied to its record.
    delivery_failed = {
      title       = "message delivery failed"
      description = "Meta reported a message undelivered (status_applied, status failed, at ERROR)."
      terms       = ["jsonPayload.event=\"status_applied\"", "jsonPayload.status=\"failed\"", "severity=\"ERROR\""]
      doc         = "Meta reported a sent message as not delivered. The log line carries Meta's code (`meta_error_code`, `meta_error_title`) and the tenant; `wapipe inspect` takes its `message_ref`."
    }
    # internal/actionrun/runner.go: an action call that failed for good (after its last attempt,
    # refused permanently, or with no action_url or secret); the user was told.
    actions_failed = {
      title       = "action failed after its last attempt"
      description = "A business action call failed for good (action_failed at ERROR); the user got the localized error."
      terms       = ["jsonPayload.event=\"action_failed\"", "severity=\"ERROR\""]
      doc         = "A business action failed for good (`reason`: retries_exhausted, permanent or not_configured) and the user was told. Check the tenant's action endpoint; `wapipe inspect` on the `action_id` shows the attempts."
    }
    # internal/budget: a tenant's spending reached 80 % (WARNING) or 100 % (ERROR) of its
    # monthly budget; its alert roles were told on WhatsApp.
    budget_threshold = {
      title       = "tenant's spending reached its budget threshold"
      description = "A tenant's month reached 80 % or 100 % of budget.monthly_usd (budget_threshold)."
      terms       = ["jsonPayload.event=\"budget_threshold\""]
      doc         = "A tenant's spending this month (Meta's messages and the model) reached 80 % or 100 % (`percent`) of its budget. Past 100 % the assistant answers with the quota notice until the month ends. `wapipe tenants usage ID` shows the month; raise `budget.monthly_usd` in the tenant file to lift it."
    }
    # internal/health/handler.go: a queue whose oldest task waits longer than 10 minutes, logged
    # each time the worker computes its health report (GET /internal/health).
    queue_stalled = {
      title       = "queue's oldest task older than 10 minutes"
      description = "A Cloud Tasks queue's oldest task has waited more than 10 minutes (queue_stalled at ERROR, from the health report)."
      terms       = ["jsonPayload.event=\"queue_stalled\"", "severity=\"ERROR\""]
      doc         = "A queue's oldest task has waited more than 10 minutes: the queue is paused, its target failing or its rate too low. `wapipe health` shows every queue's backlog (tenant queues included) and `wapipe tasks` lists a queue's tasks."
    }
  }
}

# The account restriction's metric and policy were the first, declared on their own.
moved {
  from = google_logging_metric.account_restricted
  to   = google_logging_metric.alert["account_restricted"]
}

moved {
  from = google_monitoring_alert_policy.account_restricted
  to   = google_monitoring_alert_policy.alert["account_restricted"]
}

resource "google_logging_metric" "alert" {
  for_each = local.log_alerts

  project     = var.project_id
  name        = "${var.name_prefix}/${each.key}"
  description = each.value.description
  filter = join("\n", concat([
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${local.worker_service_name}\"",
  ], each.value.terms))

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
  }

  depends_on = [google_project_service.api]
}

resource "google_monitoring_alert_policy" "alert" {
  for_each = local.log_alerts

  project      = var.project_id
  display_name = "${var.name_prefix}: ${each.value.title}"
  combiner     = "OR"
  severity     = "ERROR"

  conditions {
    display_name = "${each.key} on the worker"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"logging.googleapis.com/user/${google_logging_metric.alert[each.key].name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  notification_channels = var.alert_notification_channels

  documentation {
    mime_type = "text/markdown"
    content   = each.value.doc
  }

  alert_strategy {
    auto_close = "86400s"
  }
}
