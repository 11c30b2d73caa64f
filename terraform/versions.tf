terraform {
  # 1.5 for import blocks: a project that already has a Firestore "(default)" database imports it
  # (see README.md) rather than re-creating it.
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 7.0"
    }
    # Pinned with google so that adopting a beta-only field later is one provider line, not a
    # second upgrade.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 7.0"
    }
  }
}
