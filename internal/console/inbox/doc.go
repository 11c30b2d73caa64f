// Package inbox is the console's room of conversations: a tenant's inbox as a split view (its
// conversations under a filter or a search, beside the open conversation, whose thread htmx
// refreshes), the operator's actions on a conversation (reply, ask for the phone number, assign,
// close), and a message's image fetched through the worker on demand. The console mounts it
// (internal/console); it renders with the console's page kit (internal/console/page).
//
// People are shown by what people read (contacts.go): the WhatsApp profile name and username,
// and the phone's last four digits where Meta shared it; never a phone number or a
// business-scoped user id (BSUID) in clear. Replies go to the phone when it is known, else by
// recipient (the BSUID), through the outbox's rules (reply.go).
package inbox
