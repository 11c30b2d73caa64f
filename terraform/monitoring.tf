# Log-based metrics and the alert policies on them. The filters match the worker's log lines by
# their event name and severity (the code's slog JSON: jsonPayload.event, severity), so an
# operator is told when something stops a tenant's messaging without reading the logs.

# account_update: Meta restricted, disabled or removed a tenant's WhatsApp Business Account
# (internal/events logs it at ERROR; a lifted restriction is a WARNING and does not count).
resource "google_logging_metric" "account_restricted" {
  project     = var.project_id
  name        = "${var.name_prefix}/account_restricted"
  description = "A tenant's WhatsApp Business Account restricted, disabled or removed by Meta (account_update at ERROR)."
  filter      = <<-EOT
    resource.type="cloud_run_revision"
    resource.labels.service_name="${local.worker_service_name}"
    jsonPayload.event="account_update"
    severity="ERROR"
  EOT

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"
    unit        = "1"
  }

  depends_on = [google_project_service.api]
}

resource "google_monitoring_alert_policy" "account_restricted" {
  project      = var.project_id
  display_name = "${var.name_prefix}: WhatsApp Business Account restricted"
  combiner     = "OR"
  severity     = "ERROR"

  conditions {
    display_name = "account_update at ERROR on the worker"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"logging.googleapis.com/user/${google_logging_metric.account_restricted.name}\""
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
    content   = "Meta restricted, disabled or removed a tenant's WhatsApp Business Account: its messaging is stopped. `wapipe health` names the tenant (restricted_accounts) and `wapipe tenants show ID` says what Meta reported."
  }

  alert_strategy {
    auto_close = "86400s"
  }
}
