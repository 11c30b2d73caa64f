// Package whatsapp holds the WhatsApp Cloud API webhook payload types, the one parser that the
// webhook and the worker share, the inbound_event_id derivation, and the normalised Message and
// Status shapes that the rest of wapipe works with.
package whatsapp
