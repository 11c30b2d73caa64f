# The database every service but the webhook uses (FIRESTORE_DATABASE). A project that already has
# a "(default)" database imports it instead (README.md).
resource "google_firestore_database" "database" {
  project     = var.project_id
  name        = var.firestore_database
  location_id = local.firestore_location
  type        = "FIRESTORE_NATIVE"

  # The dedupe markers and idempotency records are what keep a message from being answered twice:
  # the database must not go away with a careless destroy.
  delete_protection_state = "DELETE_PROTECTION_ENABLED"
  deletion_policy         = "ABANDON"

  depends_on = [google_project_service.api["firestore.googleapis.com"]]
}

# The webhook's own database (INBOUND_FIRESTORE_DATABASE): its dedupe markers and the payloads too
# big for a task, and nothing else. IAM cannot name a collection, but it can name a database, so
# this is what keeps the public webhook away from tenants, API keys and conversations (iam.tf).
resource "google_firestore_database" "inbound" {
  project     = var.project_id
  name        = var.inbound_firestore_database
  location_id = local.firestore_location
  type        = "FIRESTORE_NATIVE"

  # The markers are what keep a delivery from being answered twice.
  delete_protection_state = "DELETE_PROTECTION_ENABLED"
  deletion_policy         = "ABANDON"

  depends_on = [google_project_service.api["firestore.googleapis.com"]]
}

locals {
  # Every collection group whose documents carry expire_at: store.Collections(), including the
  # invites subcollection under tenants, the messages under conversations and the call markers
  # (calls) under usage, split by database: the webhook's (inbound_events and the payload_chunks
  # under them) and the main one. A TTL policy applies to one collection group of one database,
  # so each needs its own; terraform_test.go checks these lists against the code. Tenants,
  # phone_numbers, members and the usage counters themselves do not expire.
  inbound_ttl_collection_groups = [
    "inbound_events",
    "payload_chunks",
  ]
  ttl_collection_groups = [
    "inbound_traces",
    "outbound_messages",
    "message_statuses",
    "dead_letters",
    "invites",
    "conversations",
    "messages",
    "sender_windows",
    "calls",
    "actions",
    "connect_states",
    "held_messages",
    "choice_questions",
    "billed_messages",
    "budget_alerts",
  ]
}

# One TTL policy on expire_at (store.ExpireAtField) per collection group. Firestore deletes a
# document some time (typically within a day) after its expire_at has passed.
resource "google_firestore_field" "expire_at" {
  for_each = toset(local.ttl_collection_groups)

  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = each.value
  field      = "expire_at"

  ttl_config {}

  # No query filters or orders on expire_at, and an indexed timestamp that only grows (every write
  # sets now + retention) is a write hot spot, as Firestore's TTL guidance warns: an empty
  # index_config switches the single-field indexes off for this field, in every scope (collection
  # and collection group).
  index_config {}
}

resource "google_firestore_field" "inbound_expire_at" {
  for_each = toset(local.inbound_ttl_collection_groups)

  project    = var.project_id
  database   = google_firestore_database.inbound.name
  collection = each.value
  field      = "expire_at"

  ttl_config {}

  # As above: never queried, so no index.
  index_config {}
}

# Composite indexes for the health report's count aggregations (internal/health): equality on
# state (and latency_bucket) with a range on a timestamp. Equality-only queries use Firestore's
# automatic single-field indexes.
resource "google_firestore_index" "outbound_sent_since" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "state"
    order      = "ASCENDING"
  }
  fields {
    field_path = "sent_at"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "outbound_updated_since" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "state"
    order      = "ASCENDING"
  }
  fields {
    field_path = "updated_at"
    order      = "ASCENDING"
  }
}

resource "google_firestore_index" "outbound_latency" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "state"
    order      = "ASCENDING"
  }
  fields {
    field_path = "latency_bucket"
    order      = "ASCENDING"
  }
  fields {
    field_path = "sent_at"
    order      = "ASCENDING"
  }
}

# The evidence that Meta never took a send of unknown outcome (internal/store
# Outbound.StatusSeenAfter): a status reached a later send from the same number.
resource "google_firestore_index" "outbound_status_evidence" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "phone_number_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "delivery_status"
    order      = "ASCENDING"
  }
  fields {
    field_path = "sending_since"
    order      = "ASCENDING"
  }
}

# The sends whose task may be gone (killed on its last attempt mid-send), for the sweep
# (Outbound.StrandedSends); the pending ones use outbound_updated_since.
resource "google_firestore_index" "outbound_state_since" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "state"
    order      = "ASCENDING"
  }
  fields {
    field_path = "sending_since"
    order      = "ASCENDING"
  }
}

# The sends of unknown outcome held on their record, for the sweep (Outbound.HeldUnknown).
resource "google_firestore_index" "outbound_held" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "outbound_messages"

  fields {
    field_path = "outcome_held"
    order      = "ASCENDING"
  }
  fields {
    field_path = "held_until"
    order      = "ASCENDING"
  }
}

# A conversation's inbox (internal/store ConversationStore.NextInbox): its messages still in the
# inbox, those whose turn is done but whose replies are unsent first, then by Meta timestamp and
# arrival.
resource "google_firestore_index" "conversation_inbox" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "messages"

  fields {
    field_path = "inbox"
    order      = "ASCENDING"
  }
  fields {
    field_path = "turn"
    order      = "ASCENDING"
  }
  fields {
    field_path = "timestamp"
    order      = "ASCENDING"
  }
  fields {
    field_path = "received_at"
    order      = "ASCENDING"
  }
  fields {
    field_path = "arrived_at"
    order      = "ASCENDING"
  }
}

# The sweep's stranded conversations (ConversationStore.Stranded, internal/sweep): a range on
# lease.expires_at alone, which Firestore's automatic single-field index serves, so no resource
# here; a google_firestore_field that switched that index off would break the sweep.

# A conversation's messages in order (ConversationStore.Messages).
resource "google_firestore_index" "conversation_messages" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "messages"

  fields {
    field_path = "timestamp"
    order      = "ASCENDING"
  }
  fields {
    field_path = "received_at"
    order      = "ASCENDING"
  }
  fields {
    field_path = "arrived_at"
    order      = "ASCENDING"
  }
}

# The console's inbox (internal/store ListConversations): a tenant's conversations, optionally
# open or closed, latest message first (the document id breaks ties, in the same direction).
resource "google_firestore_index" "console_inbox" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "conversations"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "last_message_at"
    order      = "DESCENDING"
  }
}

resource "google_firestore_index" "console_inbox_by_status" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "conversations"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "status"
    order      = "ASCENDING"
  }
  fields {
    field_path = "last_message_at"
    order      = "DESCENDING"
  }
}

# The console's failures page (PageDeadLetters): the dead letters waiting for replay, newest first.
resource "google_firestore_index" "console_dead_letters" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "dead_letters"

  fields {
    field_path = "replayed"
    order      = "ASCENDING"
  }
  fields {
    field_path = "created_at"
    order      = "DESCENDING"
  }
}

# A conversation's latest messages, for its console page (ConversationStore.LatestMessages).
resource "google_firestore_index" "console_latest_messages" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "messages"

  fields {
    field_path = "timestamp"
    order      = "DESCENDING"
  }
  fields {
    field_path = "received_at"
    order      = "DESCENDING"
  }
  fields {
    field_path = "arrived_at"
    order      = "DESCENDING"
  }
}

# The console's inbox filter "Assigned to me" (store.ListInbox): a tenant's conversations in one
# status assigned to one operator, latest message first.
resource "google_firestore_index" "console_inbox_assigned" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "conversations"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "status"
    order      = "ASCENDING"
  }
  fields {
    field_path = "assigned_to"
    order      = "ASCENDING"
  }
  fields {
    field_path = "last_message_at"
    order      = "DESCENDING"
  }
}

# The same without a status ("All" with an assignee).
resource "google_firestore_index" "console_inbox_assigned_any_status" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "conversations"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "assigned_to"
    order      = "ASCENDING"
  }
  fields {
    field_path = "last_message_at"
    order      = "DESCENDING"
  }
}

# The inbox search by the start of a contact's name (store.ConversationsByNamePrefix).
resource "google_firestore_index" "console_inbox_by_name" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "conversations"

  fields {
    field_path = "tenant_id"
    order      = "ASCENDING"
  }
  fields {
    field_path = "contact_name"
    order      = "ASCENDING"
  }
}

# The inbox search by the start of a message (store.ConversationIDsByTextPrefix): a range on text
# over every conversation's messages, which needs a collection-group single-field index (Firestore
# builds only collection-scope ones by itself).
resource "google_firestore_field" "message_text" {
  project    = var.project_id
  database   = google_firestore_database.database.name
  collection = "messages"
  field      = "text"

  index_config {
    indexes {
      order = "ASCENDING"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}
