package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// The read-only queries of the console's inbox (internal/console): a tenant's conversations
// filtered by assignee, the conversations of given ids, and the searches by contact name and by
// the beginning of a message's text. Each comment gives the index it needs in production (the
// emulator needs none).

// InboxQuery selects a page of a tenant's conversations for the inbox.
type InboxQuery struct {
	TenantID string
	// Status is ConversationOpen, ConversationClosed, or "" for both.
	Status string
	// AssignedTo keeps only the conversations assigned to this operator ("" for any).
	AssignedTo string
	// Limit is the page size; 50 when zero.
	Limit int
	// After is the page token a previous page returned; "" for the first page.
	After string
}

// ListInbox returns a page of a tenant's conversations by last_message_at, newest first. A
// composite index (terraform/firestore.tf) serves it; with AssignedTo it needs one on (tenant_id,
// [status,] assigned_to, last_message_at desc). One query returning at most Limit+1 documents.
func (c *ConversationStore) ListInbox(ctx context.Context, q InboxQuery) (ConversationPage, error) {
	if q.TenantID == "" {
		return ConversationPage{}, errors.New("list inbox: no tenant")
	}
	fq := c.fs.Collection(Conversations).Where("tenant_id", "==", q.TenantID)
	if q.Status != "" {
		fq = fq.Where("status", "==", q.Status)
	}
	if q.AssignedTo != "" {
		fq = fq.Where("assigned_to", "==", q.AssignedTo)
	}
	convs, next, err := page(ctx, fq, "last_message_at", q.After, q.Limit, "conversations",
		func(c Conversation) string { return c.ID }, func(c Conversation) time.Time { return c.LastMessageAt })
	if err != nil {
		return ConversationPage{}, err
	}
	return ConversationPage{Conversations: convs, Next: next}, nil
}

// GetConversations reads the conversations of ids that exist, in the order of ids. One batch
// read, one read per id.
func (c *ConversationStore) GetConversations(ctx context.Context, ids []string) ([]Conversation, error) {
	refs := make([]*firestore.DocumentRef, 0, len(ids))
	for _, id := range ids {
		if id == "" || strings.Contains(id, "/") {
			continue
		}
		refs = append(refs, c.conversationDoc(id))
	}
	if len(refs) == 0 {
		return nil, nil
	}
	snaps, err := c.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read conversations: %w", err)
	}
	convs, err := decodeAll[Conversation](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode conversation: %w", err)
	}
	var out []Conversation
	for _, conv := range convs {
		if conv != nil {
			out = append(out, *conv)
		}
	}
	return out, nil
}

// prefixEnd is the end of the range of strings that begin with prefix: Firestore has no prefix
// operator, but orders strings by their UTF-8 bytes, and U+F8FF sorts after what people type.
func prefixEnd(prefix string) string { return prefix + "\uf8ff" }

// ConversationsByNamePrefix returns up to limit of a tenant's conversations whose contact name
// begins with prefix (as stored: case counts), by name. Needs a composite index (tenant_id,
// contact_name). One query.
func (c *ConversationStore) ConversationsByNamePrefix(ctx context.Context, tenantID, prefix string, limit int) ([]Conversation, error) {
	if tenantID == "" || prefix == "" {
		return nil, nil
	}
	q := c.fs.Collection(Conversations).Where("tenant_id", "==", tenantID).
		Where("contact_name", ">=", prefix).Where("contact_name", "<", prefixEnd(prefix)).
		OrderBy("contact_name", firestore.Asc).Limit(limit)
	return queryAll[Conversation](ctx, q, "conversations by name")
}

// ConversationIDsByTextPrefix returns the ids of the conversations (of every tenant: stored
// messages carry no tenant) with a stored message whose text begins with prefix, at most limit
// messages looked at, in text order. The caller keeps its tenant's. Needs the single-field index
// on messages.text enabled for collection-group queries. One query.
func (c *ConversationStore) ConversationIDsByTextPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	if prefix == "" {
		return nil, nil
	}
	q := c.fs.CollectionGroup(ConversationMessages).
		Where("text", ">=", prefix).Where("text", "<", prefixEnd(prefix)).
		OrderBy("text", firestore.Asc).Select().Limit(limit)
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read messages by text: %w", err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, s := range snaps {
		// Only the messages under conversations: another collection named messages is not ours.
		conv := s.Ref.Parent.Parent
		if conv == nil || conv.Parent == nil || conv.Parent.ID != Conversations || seen[conv.ID] {
			continue
		}
		seen[conv.ID] = true
		ids = append(ids, conv.ID)
	}
	return ids, nil
}
