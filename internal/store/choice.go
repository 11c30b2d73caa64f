package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/wapipe/wapipe/internal/contact"
)

// Collections under a shared number's phone_numbers document for a contact who is a member of
// several of its tenants and has chosen none (CONTRACT.md, "Businesses sharing a number"):
// HeldMessages keeps their messages, each its outbound task's body, until they tap a tenant in
// the list wapipe asked with (package choice); ChoiceQuestions records that the list was asked,
// once per identifier, so a burst of messages gets one list. Both expire with HeldFor.
const (
	HeldMessages    = "held_messages"
	ChoiceQuestions = "choice_questions"
)

// SourceTenantChoice marks the outbound record of the list that asks a member of several tenants
// which one a message is for (package choice).
const SourceTenantChoice = "tenant_choice"

// HeldFor is how long a message waits for its sender's choice: the customer service window its
// answer needs.
const HeldFor = 24 * time.Hour

// heldDoc is a HeldMessages document, named after the keyed message id.
type heldDoc struct {
	// People are the keyed ids of the sender's identifiers (personKeys), which the tap's
	// sender is found by.
	People []string `firestore:"people"`
	// Body is the message's outbound task body (tasks.Outbound JSON): message content, kept
	// no longer than HeldFor.
	Body      []byte    `firestore:"body"`
	Timestamp int64     `firestore:"timestamp"`
	HeldAt    time.Time `firestore:"held_at"`
	ExpireAt  time.Time `firestore:"expire_at"`
}

// questionDoc is a ChoiceQuestions document: the message whose arrival asked the list.
type questionDoc struct {
	MessageKey string    `firestore:"message_key"`
	ExpireAt   time.Time `firestore:"expire_at"`
}

// Held is a message held for its sender's choice.
type Held struct {
	// Ref names it for DropHeld.
	Ref  string
	Body []byte
}

// personKeys are the keyed ids of person's identifiers on phoneNumberID, by kind.
func (s *Invites) personKeys(phoneNumberID string, person contact.Identity) []string {
	var out []string
	for _, k := range person.Keys() {
		out = append(out, s.db.keyer.ID("held-person", phoneNumberID, string(k.Kind), k.Value))
	}
	return out
}

// HoldForChoice keeps message messageID (its Meta timestamp, its task body) from person on the
// shared number phoneNumberID until they choose a tenant, and reports whether its arrival is the
// one that asks them: the first message held since their last choice, or a retry of that
// message's own turn. Running it again for the same message changes nothing.
func (s *Invites) HoldForChoice(ctx context.Context, phoneNumberID, messageID, timestamp string, person contact.Identity, body []byte) (ask bool, err error) {
	keys := s.personKeys(phoneNumberID, person)
	if phoneNumberID == "" || strings.Contains(phoneNumberID, "/") || len(keys) == 0 || messageID == "" {
		return false, errors.New("hold for choice: no number, sender or message")
	}
	num := s.numberDoc(phoneNumberID)
	msgKey := s.db.keyer.ID("held-message", phoneNumberID, messageID)
	held := num.Collection(HeldMessages).Doc(msgKey)
	questions := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		questions[i] = num.Collection(ChoiceQuestions).Doc(k)
	}
	ts, _ := strconv.ParseInt(timestamp, 10, 64)
	ask, err = runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		now := s.now()
		snaps, err := tx.GetAll(questions)
		if err != nil {
			return false, err
		}
		qs, err := decodeAll[questionDoc](snaps)
		if err != nil {
			return false, err
		}
		ask := true
		for _, q := range qs {
			if q != nil && q.MessageKey != msgKey && now.Before(q.ExpireAt) {
				ask = false
			}
		}
		exp := now.Add(HeldFor)
		if err := tx.Set(held, heldDoc{People: keys, Body: body, Timestamp: ts, HeldAt: now, ExpireAt: exp}); err != nil {
			return false, err
		}
		if ask {
			for _, q := range questions {
				if err := tx.Set(q, questionDoc{MessageKey: msgKey, ExpireAt: exp}); err != nil {
					return false, err
				}
			}
		}
		return ask, nil
	})
	if err != nil {
		return false, fmt.Errorf("hold a message for the sender's choice on %s: %w", phoneNumberID, err)
	}
	return ask, nil
}

// HeldMessages returns the messages held for person on phoneNumberID, oldest first by Meta's
// timestamp (then by when they were held).
func (s *Invites) HeldMessages(ctx context.Context, phoneNumberID string, person contact.Identity) ([]Held, error) {
	keys := s.personKeys(phoneNumberID, person)
	if phoneNumberID == "" || strings.Contains(phoneNumberID, "/") || len(keys) == 0 {
		return nil, nil
	}
	snaps, err := s.numberDoc(phoneNumberID).Collection(HeldMessages).Where("people", "array-contains-any", keys).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read the messages held on %s: %w", phoneNumberID, err)
	}
	docs, err := decodeAll[heldDoc](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode a held message: %w", err)
	}
	type entry struct {
		d   *heldDoc
		ref string
	}
	var es []entry
	now := s.now()
	for i, d := range docs {
		if d != nil && now.Before(d.ExpireAt) {
			es = append(es, entry{d, snaps[i].Ref.ID})
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		if a.d.Timestamp != b.d.Timestamp {
			return int(a.d.Timestamp - b.d.Timestamp)
		}
		return a.d.HeldAt.Compare(b.d.HeldAt)
	})
	out := make([]Held, len(es))
	for i, e := range es {
		out[i] = Held{Ref: e.ref, Body: e.d.Body}
	}
	return out, nil
}

// DropHeld deletes the held messages refs (from HeldMessages) on phoneNumberID once they are on
// their way to the chosen tenant.
func (s *Invites) DropHeld(ctx context.Context, phoneNumberID string, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	col := s.numberDoc(phoneNumberID).Collection(HeldMessages)
	bw := s.fs.BulkWriter(ctx)
	var jobs []*firestore.BulkWriterJob
	for _, r := range refs {
		j, err := bw.Delete(col.Doc(r))
		if err != nil {
			bw.End()
			return fmt.Errorf("drop a held message: %w", err)
		}
		jobs = append(jobs, j)
	}
	bw.End()
	for _, j := range jobs {
		if _, err := j.Results(); err != nil {
			return fmt.Errorf("drop a held message on %s: %w", phoneNumberID, err)
		}
	}
	return nil
}

// ChooseOnNumber records that person chose tenant id on the shared number phoneNumberID by
// tapping it in the list (the caller checked they are its member), like a code does, and ends
// the question, so their next unchosen message would ask again.
func (s *Invites) ChooseOnNumber(ctx context.Context, phoneNumberID, id string, person contact.Identity) error {
	if phoneNumberID == "" || id == "" || strings.Contains(phoneNumberID, "/") || person.IsZero() {
		return errors.New("record a choice: no number, tenant or person")
	}
	choices := s.choiceRefs(ctx, phoneNumberID, person)
	keys := s.personKeys(phoneNumberID, person)
	_, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (struct{}, error) {
		now := s.now()
		for _, ref := range choices {
			if err := tx.Set(ref, contactDoc{TenantID: id, JoinedAt: now}); err != nil {
				return struct{}{}, err
			}
		}
		for _, k := range keys {
			if err := tx.Delete(s.numberDoc(phoneNumberID).Collection(ChoiceQuestions).Doc(k)); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		return fmt.Errorf("record the choice of %s on %s: %w", id, phoneNumberID, err)
	}
	return nil
}
