package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/wapipe/wapipe/internal/dedupe"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Inspector follows one event through wapipe's state.
type Inspector struct {
	Markers     *store.Markers
	Traces      *store.Traces
	Outbound    *store.Outbound
	Statuses    *store.Statuses
	DeadLetters *store.DeadLetterStore
	Tasks       *taskqueue.Admin
	// Hasher makes refs (LOG_HASH_KEY's): it finds an event by its event_ref and shows phone
	// numbers and wamids in bodies as refs.
	Hasher *logging.Hasher
	Conn   Conn
	// InboundQueue and OutboundQueue are the queue ids; tasks' defaults when empty.
	InboundQueue, OutboundQueue string
}

// ErrNothingFound is returned by Inspect when no record of any kind mentions the id.
var ErrNothingFound = errors.New("nothing found")

// Report is everything wapipe knows about one event.
type Report struct {
	Query          string          `json:"query"`
	InboundEventID string          `json:"inbound_event_id"`
	Marker         *dedupe.Marker  `json:"dedupe_marker"`
	Trace          *store.Trace    `json:"trace"`
	InboundTask    TaskState       `json:"inbound_task"`
	Messages       []MessageReport `json:"messages"`
	// Statuses are the delivery statuses of a status event (its inbound_event_id is
	// "<id>:<status>").
	Statuses    []store.StatusRecord `json:"statuses,omitempty"`
	DeadLetters []DeadLetter         `json:"dead_letters"`

	// EventRef is the event_ref of the event's log lines.
	EventRef string `json:"event_ref"`
}

// MessageReport is the reply side of one inbound message.
type MessageReport struct {
	MessageID      string                `json:"message_id"`
	IdempotencyKey string                `json:"idempotency_key"`
	Outbound       *store.OutboundRecord `json:"outbound_record"`
	Statuses       []store.StatusRecord  `json:"statuses"`
	OutboundTask   TaskState             `json:"outbound_task"`
}

// TaskState says whether a task of a deterministic name is still in its queue.
type TaskState struct {
	Name   string `json:"name"`
	Queued bool   `json:"queued"`
	Task   *Task  `json:"task,omitempty"`
	// Note says why the task is not shown: gone (done, or never created) or a lookup error.
	Note string `json:"note,omitempty"`
}

// DeadLetter is a dead letter as an operator reads it: the body decoded and redacted.
type DeadLetter struct {
	store.DeadLetter
	Body any `json:"body"`
	// ReplayTask is the task a replay creates (see tasks.ReplayTaskID).
	ReplayTask string `json:"replay_task"`
}

// ViewDeadLetter redacts a dead letter for display, with h making refs.
func ViewDeadLetter(h *logging.Hasher, d store.DeadLetter) DeadLetter {
	return DeadLetter{DeadLetter: d, Body: RedactJSON(h, []byte(d.Body)), ReplayTask: tasks.ReplayTaskID(d.ID)}
}

// Inspect gathers the report for id: an inbound_event_id (a wamid), an inbound message id, an
// idempotency key, or an event_ref from a log line.
func (in *Inspector) Inspect(ctx context.Context, id string) (*Report, error) {
	query := strings.TrimSpace(id)
	if query == "" {
		return nil, errors.New("empty id")
	}
	id, err := in.resolveRef(ctx, query)
	if err != nil {
		return nil, err
	}
	r := &Report{Query: query, InboundEventID: id, Messages: []MessageReport{}, DeadLetters: []DeadLetter{}}
	defer func() { r.EventRef = in.Hasher.Ref(r.InboundEventID) }()
	found := false
	msgIDs := []string{}
	records := map[string]*store.OutboundRecord{}

	// An idempotency key or a message id leads to its record, and the record to its event.
	key := tasks.IdempotencyKey(id)
	if tasks.IsIdempotencyKey(id) {
		key = id
	}
	rec, err := in.outbound(ctx, key)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		found = true
		records[rec.MessageID] = rec
		msgIDs = append(msgIDs, rec.MessageID)
		if rec.InboundEventID != "" {
			r.InboundEventID = rec.InboundEventID
		}
	}

	if r.Marker, err = in.marker(ctx, r.InboundEventID); err != nil {
		return nil, err
	}
	if r.Trace, err = in.trace(ctx, r.InboundEventID); err != nil {
		return nil, err
	}
	found = found || r.Marker != nil || r.Trace != nil
	if r.Trace != nil {
		keys := make([]string, 0, len(r.Trace.Outbound))
		for k := range r.Trace.Outbound {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			msgIDs = append(msgIDs, r.Trace.Outbound[k].MessageID)
		}
	}
	statusID, _, isStatus := strings.Cut(r.InboundEventID, ":")
	if !isStatus && strings.HasPrefix(r.InboundEventID, "wamid.") {
		// The event id of a message delivery is its first message's id.
		msgIDs = append([]string{r.InboundEventID}, msgIDs...)
	}
	if isStatus {
		if r.Statuses, err = in.Statuses.StatusesFor(ctx, statusID); err != nil {
			return nil, err
		}
		found = found || len(r.Statuses) > 0
	}
	r.InboundTask = in.task(ctx, or(in.InboundQueue, tasks.InboundQueueID), tasks.InboundTaskID(r.InboundEventID))

	dls := map[string]bool{}
	addDeadLetters := func(eventID, key string) error {
		ds, err := in.DeadLetters.DeadLettersFor(ctx, eventID, key)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if !dls[d.ID] {
				dls[d.ID] = true
				r.DeadLetters = append(r.DeadLetters, ViewDeadLetter(in.Hasher, d))
			}
		}
		return nil
	}
	if err := addDeadLetters(r.InboundEventID, ""); err != nil {
		return nil, err
	}

	seen := map[string]bool{}
	for _, mid := range msgIDs {
		if mid == "" || seen[mid] {
			continue
		}
		seen[mid] = true
		m := MessageReport{MessageID: mid, IdempotencyKey: tasks.IdempotencyKey(mid), Statuses: []store.StatusRecord{}}
		if m.Outbound = records[mid]; m.Outbound == nil {
			if m.Outbound, err = in.outbound(ctx, m.IdempotencyKey); err != nil {
				return nil, err
			}
		}
		if m.Outbound != nil && m.Outbound.GraphMessageID != "" {
			if m.Statuses, err = in.Statuses.StatusesFor(ctx, m.Outbound.GraphMessageID); err != nil {
				return nil, err
			}
		}
		m.OutboundTask = in.task(ctx, or(in.OutboundQueue, tasks.OutboundQueueID), tasks.OutboundTaskID(mid))
		if err := addDeadLetters("", m.IdempotencyKey); err != nil {
			return nil, err
		}
		found = found || m.Outbound != nil || m.OutboundTask.Queued
		r.Messages = append(r.Messages, m)
	}
	found = found || r.InboundTask.Queued || len(r.DeadLetters) > 0
	if !found {
		return nil, fmt.Errorf("%w for %q in project %s: no dedupe marker, trace, outbound record, dead letter or queued task",
			ErrNothingFound, id, in.Conn.Project)
	}
	return r, nil
}

// resolveRef returns the inbound_event_id an event_ref stands for, found on the event's dedupe
// marker or trace; any other query is returned as it is.
func (in *Inspector) resolveRef(ctx context.Context, query string) (string, error) {
	if !logging.IsRef(query) {
		return query, nil
	}
	m, err := in.Markers.MarkerByRef(ctx, query)
	if err == nil {
		return m.EventID, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	t, err := in.Traces.TraceByRef(ctx, query)
	if err == nil {
		return t.InboundEventID, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return "", fmt.Errorf("%w for event_ref %s in project %s: no dedupe marker or trace carries it (made with another LOG_HASH_KEY, or expired)",
		ErrNothingFound, query, in.Conn.Project)
}

func (in *Inspector) outbound(ctx context.Context, key string) (*store.OutboundRecord, error) {
	rec, err := in.Outbound.GetOutbound(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func (in *Inspector) marker(ctx context.Context, eventID string) (*dedupe.Marker, error) {
	m, err := in.Markers.Get(ctx, eventID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

func (in *Inspector) trace(ctx context.Context, eventID string) (*store.Trace, error) {
	t, err := in.Traces.GetTrace(ctx, eventID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// task looks a task up by its deterministic name. A lookup failure is reported in the state, not
// returned: the Firestore side of the report is worth showing on its own.
func (in *Inspector) task(ctx context.Context, queue, id string) TaskState {
	st := TaskState{Name: in.Tasks.TaskPath(queue, id)}
	t, err := in.Tasks.GetTask(ctx, st.Name, false)
	var notFound *taskqueue.TaskNotFoundError
	switch {
	case err == nil:
		v := TaskFrom(in.Hasher, t)
		st.Queued, st.Task = true, &v
	case errors.As(err, &notFound):
		st.Note = "not in the queue (completed, or never created)"
		if msg := notFound.Message; strings.Contains(msg, "recently") {
			st.Note = "not in the queue: " + msg
		}
	default:
		st.Note = "lookup failed: " + oneLine(err.Error())
	}
	return st
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteReport writes the report for people.
func WriteReport(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("inbound_event_id: %s", r.InboundEventID)
	p("event_ref: %s", r.EventRef)
	if r.Query != r.InboundEventID {
		p("  (found from %s)", r.Query)
	}
	b.WriteString("\n")
	if m := r.Marker; m != nil {
		// The marker only says the event was received; whether its task exists is the inbound
		// task's lookup below.
		p("dedupe marker (%s): %s, correlation_id %s", store.InboundEvents, m.State, m.CorrelationID)
		p("  created %s, expires %s", stamp(m.CreatedAt), stamp(m.ExpireAt))
	} else {
		p("dedupe marker (%s): none", store.InboundEvents)
	}
	if t := r.Trace; t != nil {
		p("trace (%s): %s, attempt %d, %d message(s), %d status(es), correlation_id %s", store.InboundTraces,
			t.State, t.Attempt, t.Messages, t.Statuses, t.CorrelationID)
		p("  task: %s", or(t.TaskName, "-"))
		p("  received %s, started %s, finished %s", stamp(t.ReceivedAt), stamp(t.StartedAt), stamp(t.FinishedAt))
		if t.Error != "" {
			p("  error: %s", oneLine(t.Error))
		}
		keys := make([]string, 0, len(t.Outbound))
		for k := range t.Outbound {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o := t.Outbound[k]
			line := fmt.Sprintf("  outbound enqueue %s: %s (task %s)", k, o.Status, o.TaskName)
			if o.Error != "" {
				line += ": " + oneLine(o.Error)
			}
			p("%s", line)
		}
	} else {
		p("trace (%s): none (not processed yet, or unknown)", store.InboundTraces)
	}
	writeTaskState(&b, "inbound task", r.InboundTask)
	for _, s := range r.Statuses {
		p("status %s of %s: received %s, error code %d", s.Status, s.GraphMessageID, stamp(s.ReceivedAt), s.ErrorCode)
	}
	for _, m := range r.Messages {
		b.WriteString("\n")
		p("message %s", m.MessageID)
		p("  idempotency_key: %s", m.IdempotencyKey)
		if o := m.Outbound; o != nil {
			p("  outbound record (%s): %s, %d attempt(s), graph_message_id %s", store.OutboundMessages, o.State, o.Attempts, or(o.GraphMessageID, "-"))
			p("    to %s, phone_number_id %s, correlation_id %s", or(o.ToHash, "-"), o.PhoneNumberID, o.CorrelationID)
			if o.SentAt.IsZero() {
				p("    created %s, updated %s, not sent", stamp(o.CreatedAt), stamp(o.UpdatedAt))
			} else {
				p("    created %s, updated %s, sent %s, webhook-to-sent latency %dms", stamp(o.CreatedAt), stamp(o.UpdatedAt), stamp(o.SentAt), o.LatencyMS)
			}
			if o.DeliveryStatus != "" {
				p("    delivery: %s", o.DeliveryStatus)
			}
			if o.LastError != "" {
				p("    last error (code %d): %s", o.LastErrorCode, oneLine(o.LastError))
			}
		} else {
			p("  outbound record (%s): none", store.OutboundMessages)
		}
		if len(m.Statuses) == 0 {
			p("  statuses: none")
		}
		for _, s := range m.Statuses {
			p("  status %s: received %s", s.Status, stamp(s.ReceivedAt))
		}
		writeTaskState(&b, "  outbound task", m.OutboundTask)
	}
	b.WriteString("\n")
	if len(r.DeadLetters) == 0 {
		p("dead letters: none")
	}
	for _, d := range r.DeadLetters {
		replayed := "not replayed"
		if d.Replayed {
			replayed = "replayed " + stamp(d.ReplayedAt)
		}
		p("dead letter %s: %s %s, %s, after %d retries, created %s", d.ID, d.Queue, d.Path, replayed, d.RetryCount, stamp(d.CreatedAt))
		p("  last error (code %d): %s", d.LastErrorCode, oneLine(d.LastError))
		p("  replay task: %s", d.ReplayTask)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTaskState(b *strings.Builder, label string, st TaskState) {
	if !st.Queued {
		fmt.Fprintf(b, "%s %s: %s\n", label, st.Name, st.Note)
		return
	}
	t := st.Task
	last := "not attempted yet"
	if t.LastAttempt != nil {
		last = "last attempt " + or(t.LastAttempt.Status, "in flight")
	}
	fmt.Fprintf(b, "%s %s: queued, scheduled %s, %d dispatch(es), %d response(s), %s\n",
		label, st.Name, stamp(t.ScheduleTime), t.DispatchCount, t.ResponseCount, last)
}
