package main

import (
	"context"
	"io"
	"os"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

const inspectUsage = `Usage: wapipe inspect ID [flags]

Shows what wapipe knows about one event, given its inbound_event_id (a wamid), an inbound message
id, an idempotency key (reply-…), a dead letter's id, an action's id (act_…: the action, the
record of its reply and its task) or the event_ref of a log line (ref_…, found with the
LOG_HASH_KEY of the deployment; wapipe hash-id gives it from a wamid): the dedupe marker (inbound_events), the trace (inbound_traces), per
message the outbound record (outbound_messages, keyed by the idempotency key derived from the
message id; a conversation turn's further replies under their own keys) and its delivery statuses (message_statuses, by the record's graph_message_id), the
dead letters, and the inbound and outbound tasks still in their queues (found by their
deterministic names; a tenant's replies also in its queue wa-out-TENANT). Bodies show an allow-list of fields (types, times, codes, media metadata,
reply ids); phone numbers and wamids in them appear as their refs, text, names, contact cards,
locations and Flows responses never. The markers are read from INBOUND_FIRESTORE_DATABASE when it
is set (the webhook's own database), else from --database.

Given a person instead (a phone number, a business-scoped user id US.1349… or US.ENT.…, a
@username or a contact id ct_…), it shows the contacts of every tenant that knows them: the
contact id, the refs logs carry for their phone (ph_), user ids (us_) and username (un_), never
the identifiers themselves, and their conversations.`

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", inspectUsage)
	var (
		c      connFlags
		q      queueFlags
		asJSON bool
	)
	c.register(fs)
	q.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("want exactly one ID (an inbound_event_id, a message id, an idempotency key, a dead letter id, an act_… id, an event_ref, or a person: a phone, a business-scoped user id, a @username, a ct_… id), got %d", len(pos))
	}
	h, err := hasherFromEnv(stderr)
	if err != nil {
		return err
	}
	if err := c.resolve(); err != nil {
		return err
	}
	db, err := c.store(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if operator.IsPersonQuery(pos[0]) {
		rs, err := operator.InspectContact(ctx, operator.NewPeopleStore(db), h, pos[0])
		if err != nil {
			return err
		}
		return operator.WriteJSON(stdout, rs)
	}
	queues, err := c.conn.Queues(ctx)
	if err != nil {
		return err
	}
	defer queues.Close()
	// The markers are in the webhook's own database when the deployment has one.
	markersDB := db
	if inbound := os.Getenv("INBOUND_FIRESTORE_DATABASE"); inbound != "" && inbound != c.conn.FirestoreDatabase {
		ic := c.conn
		ic.FirestoreDatabase = inbound
		if markersDB, err = ic.Store(ctx); err != nil {
			return err
		}
		defer markersDB.Close()
	}
	in := &operator.Inspector{
		Markers:     store.NewMarkers(markersDB, store.MarkerOptions{EventRef: h.Ref}),
		Traces:      store.NewTraces(db, store.Options{}),
		Outbound:    store.NewOutbound(db, store.Options{}),
		Statuses:    store.NewStatuses(db, store.Options{}),
		DeadLetters: store.NewDeadLetters(db, store.Options{}),
		Actions:     store.NewActionStore(db, store.Options{}),
		Tasks:       queues, Conn: c.conn, Hasher: h, Keyer: db.Keyer(),
		InboundQueue: q.inbound, OutboundQueue: q.outbound,
	}
	r, err := in.Inspect(ctx, pos[0])
	if err != nil {
		return err
	}
	if asJSON {
		return operator.WriteJSON(stdout, r)
	}
	return operator.WriteReport(stdout, r)
}
