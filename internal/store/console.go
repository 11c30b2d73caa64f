package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The reads and the few writes of the operators' console (internal/console): pages of
// conversations and dead letters, newest first, with an opaque page token; a batch read of
// outbound records; the last hour's sends; and the operator's own changes to a conversation.

// ErrBadPageToken is returned for a page token the console did not make.
var ErrBadPageToken = errors.New("bad page token")

// pageToken is where the next page starts: the last item's ordering timestamp and its document
// id, so items with the same timestamp are neither skipped nor repeated.
type pageToken struct {
	at time.Time
	id string
}

func (p pageToken) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.at.UnixNano(), 10) + "|" + p.id))
}

func parsePageToken(s string) (pageToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return pageToken{}, ErrBadPageToken
	}
	ns, id, ok := strings.Cut(string(raw), "|")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" || strings.Contains(id, "/") {
		return pageToken{}, ErrBadPageToken
	}
	return pageToken{at: time.Unix(0, n).UTC(), id: id}, nil
}

// page runs q ordered by field then document id, both descending, from the token after, and
// returns at most limit items and the token of the next page ("" on the last page). id gives an
// item's document id and at its ordering timestamp.
func page[T any](ctx context.Context, q firestore.Query, field string, after string, limit int, what string,
	id func(T) string, at func(T) time.Time) ([]T, string, error) {
	if limit <= 0 {
		limit = 50
	}
	q = q.OrderBy(field, firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc)
	if after != "" {
		tok, err := parsePageToken(after)
		if err != nil {
			return nil, "", err
		}
		q = q.StartAfter(tok.at, tok.id)
	}
	// One more than a page tells whether there is a next one.
	items, err := queryAll[T](ctx, q.Limit(limit+1), what)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		last := items[limit-1]
		next = pageToken{at: at(last), id: id(last)}.String()
	}
	return items, next, nil
}

// ConversationQuery selects a page of a tenant's conversations.
type ConversationQuery struct {
	TenantID string
	// Status is ConversationOpen, ConversationClosed, or "" for both.
	Status string
	// Limit is the page size; 50 when zero.
	Limit int
	// After is the page token a previous page returned; "" for the first page.
	After string
}

// ConversationPage is a page of conversations, latest message first.
type ConversationPage struct {
	Conversations []Conversation
	// Next is the token of the next page; "" on the last one.
	Next string
}

// ListConversations returns a page of a tenant's conversations by last_message_at, newest first.
// One query returning at most Limit+1 documents; a composite index (terraform/firestore.tf) serves
// it.
func (c *ConversationStore) ListConversations(ctx context.Context, q ConversationQuery) (ConversationPage, error) {
	if q.TenantID == "" {
		return ConversationPage{}, errors.New("list conversations: no tenant")
	}
	fq := c.fs.Collection(Conversations).Where("tenant_id", "==", q.TenantID)
	if q.Status != "" {
		fq = fq.Where("status", "==", q.Status)
	}
	convs, next, err := page(ctx, fq, "last_message_at", q.After, q.Limit, "conversations",
		func(c Conversation) string { return c.ID }, func(c Conversation) time.Time { return c.LastMessageAt })
	if err != nil {
		return ConversationPage{}, err
	}
	return ConversationPage{Conversations: convs, Next: next}, nil
}

// AssignConversation makes operator the conversation's assignee; ErrNotFound when there is no
// such conversation. One write.
func (c *ConversationStore) AssignConversation(ctx context.Context, conversationID, operator string) error {
	return c.consoleUpdate(ctx, conversationID, "assign", []firestore.Update{{Path: "assigned_to", Value: operator}})
}

// CloseConversation marks the conversation closed; its next inbound message opens it again.
// ErrNotFound when there is no such conversation. One write.
func (c *ConversationStore) CloseConversation(ctx context.Context, conversationID string) error {
	return c.consoleUpdate(ctx, conversationID, "close", []firestore.Update{{Path: "status", Value: ConversationClosed}})
}

func (c *ConversationStore) consoleUpdate(ctx context.Context, id, what string, ups []firestore.Update) error {
	if id == "" || strings.Contains(id, "/") {
		return ErrNotFound
	}
	ups = append(ups, firestore.Update{Path: "updated_at", Value: c.opts.Now()})
	_, err := c.conversationDoc(id).Update(ctx, ups)
	if status.Code(err) == codes.NotFound {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%s conversation: %w", what, err)
	}
	return nil
}

// LatestMessages reads a conversation's last limit stored messages, oldest first (by Meta
// timestamp, then arrival, as Messages orders them): a long conversation's page shows its end.
func (c *ConversationStore) LatestMessages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	q := c.conversationDoc(conversationID).Collection(ConversationMessages).
		OrderBy("timestamp", firestore.Desc).OrderBy("received_at", firestore.Desc).OrderBy("arrived_at", firestore.Desc).
		Limit(limit)
	msgs, err := queryAll[Message](ctx, q, "messages")
	if err != nil {
		return nil, err
	}
	slices.Reverse(msgs)
	return msgs, nil
}

// DeadLetterQuery selects a page of dead letters.
type DeadLetterQuery struct {
	// OnlyPending leaves out the dead letters replayed already.
	OnlyPending bool
	// Limit is the page size; 50 when zero.
	Limit int
	// After is the page token a previous page returned; "" for the first page.
	After string
}

// DeadLetterPage is a page of dead letters, newest first.
type DeadLetterPage struct {
	DeadLetters []DeadLetter
	Next        string
}

// PageDeadLetters returns a page of dead letters by created_at, newest first.
func (r *DeadLetterStore) PageDeadLetters(ctx context.Context, q DeadLetterQuery) (DeadLetterPage, error) {
	fq := r.fs.Collection(DeadLetters).Query
	if q.OnlyPending {
		fq = fq.Where("replayed", "==", false)
	}
	ds, next, err := page(ctx, fq, "created_at", q.After, q.Limit, "dead letters",
		func(d DeadLetter) string { return d.ID }, func(d DeadLetter) time.Time { return d.CreatedAt })
	if err != nil {
		return DeadLetterPage{}, err
	}
	return DeadLetterPage{DeadLetters: ds, Next: next}, nil
}

// GetOutbounds reads the records of keys in one batch; keys without a record are absent from the
// map. One read per key.
func (r *Outbound) GetOutbounds(ctx context.Context, keys []string) (map[string]OutboundRecord, error) {
	out := map[string]OutboundRecord{}
	if len(keys) == 0 {
		return out, nil
	}
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		refs[i] = r.outboundDoc(k)
	}
	snaps, err := r.fs.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read outbound records: %w", err)
	}
	for i, s := range snaps {
		if !s.Exists() {
			continue
		}
		var rec OutboundRecord
		if err := s.DataTo(&rec); err != nil {
			return nil, fmt.Errorf("decode outbound record: %w", err)
		}
		out[keys[i]] = rec
	}
	return out, nil
}

// SentPoint is one reply sent: when, and its webhook-to-sent latency (-1 when unknown).
type SentPoint struct {
	SentAt    time.Time
	LatencyMS int64
}

// SentSince returns the replies sent at or after since, oldest first, at most limit of them:
// only their send time and latency are read (a projection), for the console's chart.
func (r *Outbound) SentSince(ctx context.Context, since time.Time, limit int) ([]SentPoint, error) {
	q := r.fs.Collection(OutboundMessages).Where("state", "==", OutboundSent).Where("sent_at", ">=", since).
		OrderBy("sent_at", firestore.Asc).Select("sent_at", "latency_ms", "latency_bucket").Limit(limit)
	type point struct {
		SentAt        time.Time `firestore:"sent_at"`
		LatencyMS     int64     `firestore:"latency_ms"`
		LatencyBucket int64     `firestore:"latency_bucket"`
	}
	ps, err := queryAll[point](ctx, q, "sent records")
	if err != nil {
		return nil, err
	}
	out := make([]SentPoint, len(ps))
	for i, p := range ps {
		out[i] = SentPoint{SentAt: p.SentAt, LatencyMS: p.LatencyMS}
		if p.LatencyBucket < 0 {
			out[i].LatencyMS = -1
		}
	}
	return out, nil
}
