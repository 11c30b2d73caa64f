# The one image both services run (Dockerfile); Cloud Build pushes to it (cloudbuild.yaml).
resource "google_artifact_registry_repository" "images" {
  project       = var.project_id
  location      = var.region
  repository_id = var.name_prefix
  format        = "DOCKER"
  description   = "wapipe container images, built and pushed by Cloud Build."

  depends_on = [google_project_service.api["artifactregistry.googleapis.com"]]
}
