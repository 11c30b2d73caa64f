package devstack_test

import (
	"context"
	"testing"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/testenv"
)

// contactOf waits for tenantID to know the person id names (their first message or event makes
// the contact) and returns the contact.
func contactOf(t *testing.T, db *store.DB, tenantID string, id contact.Identity) store.Contact {
	t.Helper()
	contacts := store.NewContacts(db, store.Options{})
	var c store.Contact
	testenv.Eventually(t, eventsWait, func() bool {
		var ok bool
		var err error
		c, ok, err = contacts.Find(context.Background(), tenantID, id)
		return err == nil && ok
	}, "tenant %s never knew the person", tenantID)
	return c
}

// conversationOf waits for tenantID to know the person id names and returns the id of their
// conversation with the business number (store.ConversationStore.ConversationOf).
func conversationOf(t *testing.T, db *store.DB, tenantID, number string, id contact.Identity) string {
	t.Helper()
	convs := store.NewConversationStore(db, store.Options{})
	var conv string
	testenv.Eventually(t, eventsWait, func() bool {
		var ok bool
		var err error
		conv, ok, err = convs.ConversationOf(context.Background(), tenantID, number, id)
		return err == nil && ok
	}, "tenant %s never knew the person on %s", tenantID, number)
	return conv
}
