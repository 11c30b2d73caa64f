package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// Queries the collections share: pages newest first with an opaque page token (the console's
// lists), and the one document where a field has a value (lookups by ref).

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

// firstWhere reads the first document q finds.
func firstWhere[T any](ctx context.Context, q firestore.Query, what string) (T, error) {
	var v T
	docs, err := q.Limit(1).Documents(ctx).GetAll()
	if err != nil {
		return v, fmt.Errorf("query %s by event_ref: %w", what, err)
	}
	if len(docs) == 0 {
		return v, ErrNotFound
	}
	if err := docs[0].DataTo(&v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
