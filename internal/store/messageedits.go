package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// OperatorApp is the Operator of a message the business sent from the WhatsApp Business app on
// the same number (smb_message_echoes).
const OperatorApp = "app"

// Events a revoke or an edit leaves on a message whose turn had not run yet: no turn runs for
// it any more.
const (
	EventMessageDeleted = "message_deleted"
)

// EraseMessage erases what the contact deleted (a revoke): the stored text, the caption and
// filename of its media and the payload (which holds them too) of message messageID; the
// message stays, with deleted_at set. A message still waiting in the inbox for its turn is
// taken out of it, so nothing answers a deleted message. It reports false when no such message
// is stored (a revoke of a message older than the retention, or of another conversation), and
// erasing twice changes nothing more. One transaction: one read, one write.
func (c *ConversationStore) EraseMessage(ctx context.Context, conversationID, messageID string) (bool, error) {
	return c.changeMessage(ctx, conversationID, messageID, "erase message", func(m Message, now time.Time) []firestore.Update {
		ups := []firestore.Update{
			{Path: "text", Value: ""},
			{Path: "payload", Value: ""},
			{Path: "deleted_at", Value: now},
		}
		if !m.DeletedAt.IsZero() {
			return nil
		}
		if m.Media != nil {
			ups = append(ups, firestore.Update{Path: "media.caption", Value: ""}, firestore.Update{Path: "media.filename", Value: ""})
		}
		if m.Turn == TurnPending {
			ups = append(ups, firestore.Update{Path: "turn", Value: TurnDone}, firestore.Update{Path: "inbox", Value: false},
				firestore.Update{Path: "event", Value: EventMessageDeleted}, firestore.Update{Path: "committed_at", Value: now})
		}
		return ups
	})
}

// EditMessage gives message messageID the contact's new text (the caption, for a media message),
// with edited_at set. Its payload, which holds the old content, is emptied once its turn has
// run; a message still waiting for its turn keeps it, and is answered as it was sent (the edit
// comes as a message of its own). A deleted message stays deleted. It reports false when no
// such message is stored. One transaction: one read, one write.
func (c *ConversationStore) EditMessage(ctx context.Context, conversationID, messageID, text string) (bool, error) {
	return c.changeMessage(ctx, conversationID, messageID, "edit message", func(m Message, now time.Time) []firestore.Update {
		if !m.DeletedAt.IsZero() {
			return nil
		}
		ups := []firestore.Update{{Path: "text", Value: text}, {Path: "edited_at", Value: now}}
		if m.Media != nil {
			ups = append(ups, firestore.Update{Path: "media.caption", Value: text})
		}
		if m.Turn != TurnPending {
			ups = append(ups, firestore.Update{Path: "payload", Value: ""})
		}
		return ups
	})
}

// changeMessage applies the updates change gives for the stored message in a transaction; no
// updates writes nothing.
func (c *ConversationStore) changeMessage(ctx context.Context, conversationID, messageID, what string,
	change func(m Message, now time.Time) []firestore.Update) (bool, error) {
	if conversationID == "" || messageID == "" {
		return false, nil
	}
	ref := c.messageDoc(conversationID, messageID)
	found, err := runTx(ctx, c.fs, c.opts.txHooks, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		m, ok, err := getTx[Message](tx, ref)
		if err != nil || !ok {
			return false, err
		}
		if ups := change(m, c.opts.Now()); len(ups) > 0 {
			return true, tx.Update(ref, ups)
		}
		return true, nil
	}, firestore.MaxAttempts(maxTxAttempts))
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return found, nil
}

// errNoContact is returned for an empty or malformed contact id, and for a call about nobody (no
// tenant, or an identity with no identifier: nothing is ever keyed by an empty one).
var errNoContact = errors.New("no contact")

// HumanByApp is who took a conversation over from the WhatsApp Business app.
const HumanByApp = "WhatsApp Business app"

// AddBusinessMessage stores what the business sent from the WhatsApp Business app on the
// conversation's number (an smb_message_echoes message, Operator OperatorApp), and, with history,
// adds it to the assistant's history when the conversation exists, so the model sees what the
// business said, and takes the conversation over (HumanAt, HumanByApp: the assistant stays
// silent); neither on a shared number, whose app is not this tenant's alone.
// The history is written outside the conversation's lease: a turn committed at the same moment
// writes its own state over it, which loses the echo from the history only (the stored message
// stays). Storing it twice changes nothing. One write, then one transaction: one read, at most
// one write.
func (c *ConversationStore) AddBusinessMessage(ctx context.Context, conversationID string, m Message, history bool) error {
	m.Operator = OperatorApp
	if err := c.AddOutbound(ctx, conversationID, m); err != nil {
		return err
	}
	ref := c.conversationDoc(conversationID)
	at := time.Unix(m.Timestamp, 0).UTC()
	err := c.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		conv, ok, err := getTx[Conversation](tx, ref)
		if err != nil || !ok {
			return err // without a conversation yet, the message is its first: the history is empty
		}
		var ups []firestore.Update
		if history && at.After(conv.HumanAt) && at.After(conv.HandedBackAt) {
			// A human of the business answered from the app: the assistant stays silent (takeover).
			// Not on a shared number, whose app is not this tenant's alone: another business there
			// must not silence this one's assistant.
			ups = append(ups, firestore.Update{Path: "human_at", Value: at}, firestore.Update{Path: "human_by", Value: HumanByApp})
		}
		if st := conv.State.WithBusinessMessage(m.MessageID, m.Text, at); history && len(st.Turns) != len(conv.State.Turns) {
			ups = append(ups, firestore.Update{Path: "state.turns", Value: st.Turns})
		}
		if len(ups) == 0 {
			return nil
		}
		return tx.Update(ref, ups)
	}, firestore.MaxAttempts(maxTxAttempts))
	if err != nil {
		return fmt.Errorf("add business message to the history: %w", err)
	}
	return nil
}
