# The api and the console call the worker's tenant routes (/internal/tenants/…: a media upload, a
# template listing, a message's image), which take a tenant's access token that only the worker
# may open. The worker's ingress is internal only, and Cloud Run counts a call from another Cloud
# Run service as internal only when it leaves through a VPC network: Direct VPC egress with all
# traffic routed, on a subnet with Private Google Access
# (https://cloud.google.com/run/docs/securing/ingress). Everything else those two services reach on
# the internet (Graph's code exchange and debug_token) leaves through Cloud NAT.

resource "google_compute_network" "wapipe" {
  project                 = var.project_id
  name                    = "wapipe"
  auto_create_subnetworks = false

  depends_on = [google_project_service.api["compute.googleapis.com"]]
}

resource "google_compute_subnetwork" "run_egress" {
  project                  = var.project_id
  name                     = "wapipe-run-egress"
  region                   = var.region
  network                  = google_compute_network.wapipe.id
  ip_cidr_range            = var.run_egress_cidr
  private_ip_google_access = true
}

resource "google_compute_router" "wapipe" {
  project = var.project_id
  name    = "wapipe"
  region  = var.region
  network = google_compute_network.wapipe.id
}

resource "google_compute_router_nat" "wapipe" {
  project                            = var.project_id
  name                               = "wapipe"
  region                             = var.region
  router                             = google_compute_router.wapipe.name
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "LIST_OF_SUBNETWORKS"

  subnetwork {
    name                    = google_compute_subnetwork.run_egress.id
    source_ip_ranges_to_nat = ["ALL_IP_RANGES"]
  }

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}
