# The APIs wapipe uses. disable_on_destroy = false: removing wapipe must not switch an API off for
# everything else in the project.
resource "google_project_service" "api" {
  for_each = toset([
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudkms.googleapis.com",
    # Project IAM grants and the google_project data source go through Resource Manager.
    "cloudresourcemanager.googleapis.com",
    # The sweep's job (scheduler.tf).
    "cloudscheduler.googleapis.com",
    "cloudtasks.googleapis.com",
    "cloudtrace.googleapis.com",
    # The VPC and Cloud NAT the api's and the console's egress goes through (network.tf).
    "compute.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
  ])

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}
