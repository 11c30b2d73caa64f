package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/fanout"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// inboundIDs notes an inbound task's ids on t.
func inboundIDs(t *task, in *tasks.Inbound) {
	in.CorrelationID = t.correlate(in.CorrelationID)
	t.inboundEventID = in.InboundEventID
}

// processInbound normalises one delivery, records its statuses and creates one outbound
// task per message. It answers 503 when anything must be retried: already-created outbound tasks
// deduplicate by name, already-recorded statuses by key.
func (s *Server) processInbound(ctx context.Context, t *task, in tasks.Inbound, start time.Time) outcome {
	ctx, logger := logging.With(ctx, logging.EventID(in.InboundEventID), "correlation_id", in.CorrelationID)
	counts, err := s.fanner.Process(ctx, logger, in, fanout.Attempt{Name: t.name, RetryCount: t.retryCount})
	if errors.Is(err, fanout.ErrMalformed) {
		// The webhook parsed it before enqueueing, so this is a defect, not bad luck:
		// retrying will not help, and the dead letter keeps the payload.
		err = permanentFailure(err)
	}
	if err != nil {
		return s.fail(ctx, t, err)
	}
	logger.InfoContext(ctx, "inbound event fanned out", "event", "inbound_fanout",
		"messages", counts.Messages, "statuses", counts.Statuses, "tasks_created", counts.Created,
		"tasks_existed", counts.Existed, "unrouted", counts.Unrouted, "no_sender", counts.NoSender, "identity_changes", counts.IdentityChanges,
		"events", counts.Events, "duration_ms", s.deps.Now().Sub(start).Milliseconds())
	return outcome{kind: fannedOut, fanOut: counts}
}

// validateInbound checks what the webhook always writes: an event id, and either the payload (a
// JSON object) or a payload_ref of the one form the payload store makes.
func validateInbound(in tasks.Inbound) error {
	var errs []error
	if in.InboundEventID == "" {
		errs = append(errs, errors.New("inbound_event_id is empty"))
	}
	switch {
	case len(in.Payload) == 0 && in.PayloadRef == "":
		errs = append(errs, errors.New("neither payload nor payload_ref is set"))
	case len(in.Payload) > 0 && in.PayloadRef != "":
		errs = append(errs, errors.New("both payload and payload_ref are set"))
	case in.PayloadRef != "":
		if _, err := store.CheckPayloadRef(in.PayloadRef); err != nil {
			errs = append(errs, fmt.Errorf("payload_ref: %w", err))
		}
	case in.Payload[0] != '{':
		// json.RawMessage holds the value as sent, without leading space: "null", an array or a
		// string is not a delivery.
		errs = append(errs, errors.New("payload is not a JSON object"))
	}
	return errors.Join(errs...)
}
