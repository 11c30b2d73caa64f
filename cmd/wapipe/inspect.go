package main

import (
	"context"
	"io"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/ops"
	"github.com/wapipe/wapipe/internal/store"
)

const inspectUsage = `Usage: wapipe inspect ID [flags]

Shows what wapipe knows about one event, given its inbound_event_id, an inbound message id or an
idempotency key (reply-…): the dedupe marker (inbound_events), the trace (inbound_traces), per
message the outbound record (outbound_messages, keyed by the idempotency key derived from the
message id) and its delivery statuses (message_statuses, by the record's graph_message_id), the
dead letters, and the inbound and outbound tasks still in their queues (found by their
deterministic names). Message text and phone numbers are never shown.`

func runInspect(ctx context.Context, args []string, stdout, _ io.Writer) error {
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
		return usageErrorf("want exactly one ID (an inbound_event_id or a message id), got %d", len(pos))
	}
	if err := c.resolve(); err != nil {
		return err
	}
	fsc, err := c.conn.Firestore(ctx)
	if err != nil {
		return err
	}
	defer fsc.Close()
	tc, err := c.conn.CloudTasks(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	in := &ops.Inspector{
		Dedupe:  dedupe.New(fsc, dedupe.Options{}),
		Records: store.NewRecords(fsc, store.RecordsOptions{}),
		Tasks:   tc, Conn: c.conn,
		InboundQueue: q.inbound, OutboundQueue: q.outbound,
	}
	r, err := in.Inspect(ctx, pos[0])
	if err != nil {
		return err
	}
	if asJSON {
		return ops.WriteJSON(stdout, r)
	}
	return ops.WriteReport(stdout, r)
}
