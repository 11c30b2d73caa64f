// Package whatsapp holds the WhatsApp Cloud API webhook payload types, the one parser that the
// webhook and the worker share, the inbound_event_id derivation, and the normalised Message and
// Status shapes that the rest of wapipe works with.
//
// Parse decodes a body, InboundEventID derives the id deliveries are deduplicated on, and
// Normalize flattens every message and status. The Sample* builders produce bodies shaped
// exactly like Meta's for tests, the local stack and the CLI; testdata/ holds realistic
// payloads of every message and status type.
package whatsapp
