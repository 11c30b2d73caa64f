package operator

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/wapipe/wapipe/internal/keyedid"
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
	// Actions finds an action by the act_… id the console and logs print; nil: not looked up.
	Actions *store.ActionStore
	Tasks   *taskqueue.Admin
	// Hasher makes refs (LOG_HASH_KEY's): it finds an event by its event_ref and shows phone
	// numbers and wamids in bodies as refs.
	Hasher *logging.Hasher
	// Keyer makes the reply keys (LOG_HASH_KEY's); the development key's when nil. A reply
	// recorded before keys were keyed is found by its unkeyed key.
	Keyer *keyedid.Keyer
	Conn  Conn
	// InboundQueue and OutboundQueue are the queue ids; tasks' defaults when empty.
	InboundQueue, OutboundQueue string
}

// ErrNothingFound is returned by Inspect when no record of any kind mentions the id.
var ErrNothingFound = errors.New("nothing found")

// Report is everything wapipe knows about one event.
type Report struct {
	Query          string          `json:"query"`
	InboundEventID string          `json:"inbound_event_id"`
	Marker         *store.Marker   `json:"dedupe_marker"`
	Trace          *store.Trace    `json:"trace"`
	InboundTask    TaskState       `json:"inbound_task"`
	Messages       []MessageReport `json:"messages"`
	// Statuses are the delivery statuses of a status event (its inbound_event_id is
	// "<id>:<status>").
	Statuses    []store.StatusRecord `json:"statuses,omitempty"`
	DeadLetters []DeadLetter         `json:"dead_letters"`
	// EventReplies are the other replies recorded for the event (by their inbound_event_id):
	// an action's result, a turn's reply sent for a message of the event under another key.
	EventReplies []store.OutboundRecord `json:"event_replies,omitempty"`
	// Action is the action an act_… id names, with its reply to the user.
	Action *ActionReport `json:"action,omitempty"`

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
	// Replies are the conversation turn's further replies (index 1 on; the first is Outbound),
	// each under its conversation.ReplyKey.
	Replies []ReplyReport `json:"replies,omitempty"`
}

// ReplyReport is one further reply of a conversation turn.
type ReplyReport struct {
	Index          int                   `json:"index"`
	IdempotencyKey string                `json:"idempotency_key"`
	Outbound       *store.OutboundRecord `json:"outbound_record"`
}

// ActionReport is an action as an operator reads it: its record without the business's reply
// text (the user's to read, not the operator's), and the record and task of its reply.
type ActionReport struct {
	store.ActionRecord
	// ReplyRecord is the record of the message that told the user the result, under ReplyKey.
	ReplyRecord *store.OutboundRecord `json:"reply_record"`
	Task        TaskState             `json:"task"`
}

// maxReplies bounds the further replies looked for per message (a turn sends a few), and
// maxEventReplies the other replies read for an event.
const (
	maxReplies      = 10
	maxEventReplies = 50
)

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
// idempotency key, an event_ref from a log line, an action id or a dead letter's id.
func (in *Inspector) Inspect(ctx context.Context, id string) (*Report, error) {
	query := strings.TrimSpace(id)
	if query == "" {
		return nil, errors.New("empty id")
	}
	if strings.HasPrefix(query, "act_") && in.Actions != nil {
		return in.inspectAction(ctx, query)
	}
	id, dead, err := in.resolveQuery(ctx, query)
	if err != nil {
		return nil, err
	}
	x := &inspection{in: in, dls: map[string]bool{},
		r: &Report{Query: query, InboundEventID: id, Messages: []MessageReport{}, DeadLetters: []DeadLetter{}}}
	r := x.r
	if dead != nil && id == "" {
		x.addDeadLetter(*dead)
		return r, nil
	}
	defer func() { r.EventRef = in.Hasher.Ref(r.InboundEventID) }()
	msgIDs, err := x.event(ctx, id)
	if err != nil {
		return nil, err
	}
	if dead != nil {
		x.addDeadLetter(*dead)
	}
	if err := x.addDeadLetters(ctx, r.InboundEventID, ""); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, mid := range msgIDs {
		if mid == "" || seen[mid] {
			continue
		}
		seen[mid] = true
		m, err := x.message(ctx, mid)
		if err != nil {
			return nil, err
		}
		r.Messages = append(r.Messages, m)
	}
	if err := x.eventReplies(ctx); err != nil {
		return nil, err
	}
	if !x.found && !r.InboundTask.Queued && len(r.DeadLetters) == 0 && len(r.EventReplies) == 0 {
		return nil, fmt.Errorf("%w for %q in project %s: no dedupe marker, trace, outbound record, dead letter or queued task",
			ErrNothingFound, id, in.Conn.Project)
	}
	return r, nil
}

// resolveQuery turns the query into the id to report on. A dead letter's id (printed by replay,
// the console and the health report) leads to its event, or to its reply's key, and is returned
// as dead; any other query is resolved as a ref (resolveRef).
func (in *Inspector) resolveQuery(ctx context.Context, query string) (id string, dead *store.DeadLetter, err error) {
	if isDeadLetterID(query) {
		d, err := in.DeadLetters.GetDeadLetter(ctx, query)
		switch {
		case err == nil:
			return or(d.InboundEventID, d.IdempotencyKey), &d, nil
		case !errors.Is(err, store.ErrNotFound):
			return "", nil, err
		}
	}
	id, err = in.resolveRef(ctx, query)
	return id, nil, err
}

// inspection is one Inspect's report as it is built: whether anything was found for the query,
// and the dead letters already in the report (each is shown once).
type inspection struct {
	in    *Inspector
	r     *Report
	found bool
	dls   map[string]bool
	// known is the outbound record the query named, by its message id (read once).
	known map[string]*store.OutboundRecord
}

// addDeadLetter adds d to the report, once.
func (x *inspection) addDeadLetter(d store.DeadLetter) {
	if !x.dls[d.ID] {
		x.dls[d.ID] = true
		x.r.DeadLetters = append(x.r.DeadLetters, ViewDeadLetter(x.in.Hasher, d))
	}
}

// addDeadLetters adds the dead letters of the event or of the idempotency key.
func (x *inspection) addDeadLetters(ctx context.Context, eventID, key string) error {
	ds, err := x.in.DeadLetters.ListDeadLettersFor(ctx, eventID, key)
	if err != nil {
		return err
	}
	for _, d := range ds {
		x.addDeadLetter(d)
	}
	return nil
}

// event fills in the event's side of the report for id (an event id, a message id or an
// idempotency key): the outbound record id names, which leads to its event; the event's marker,
// trace, statuses and inbound task. It returns the ids of the messages to report on.
func (x *inspection) event(ctx context.Context, id string) ([]string, error) {
	in, r := x.in, x.r
	msgIDs := []string{}
	var rec *store.OutboundRecord
	var err error
	if tasks.IsIdempotencyKey(id) {
		rec, err = in.outbound(ctx, id)
	} else {
		_, rec, err = x.reply(ctx, id, 0)
	}
	if err != nil {
		return nil, err
	}
	if rec != nil {
		x.found = true
		x.known = map[string]*store.OutboundRecord{rec.MessageID: rec}
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
	x.found = x.found || r.Marker != nil || r.Trace != nil
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
		if r.Statuses, err = in.Statuses.ListStatusesFor(ctx, statusID); err != nil {
			return nil, err
		}
		x.found = x.found || len(r.Statuses) > 0
	}
	r.InboundTask = in.task(ctx, or(in.InboundQueue, tasks.InboundQueueID), tasks.InboundTaskID(r.InboundEventID))
	return msgIDs, nil
}

// message reports the reply side of inbound message mid: its record, statuses and task, the
// turn's further replies, and their dead letters.
func (x *inspection) message(ctx context.Context, mid string) (MessageReport, error) {
	in := x.in
	m := MessageReport{MessageID: mid, IdempotencyKey: tasks.IdempotencyKey(in.keyer(), mid), Statuses: []store.StatusRecord{}}
	var err error
	if m.Outbound = x.known[mid]; m.Outbound == nil {
		if m.IdempotencyKey, m.Outbound, err = x.reply(ctx, mid, 0); err != nil {
			return m, err
		}
	} else {
		m.IdempotencyKey = m.Outbound.IdempotencyKey
	}
	if m.Outbound != nil && m.Outbound.GraphMessageID != "" {
		if m.Statuses, err = in.Statuses.ListStatusesFor(ctx, m.Outbound.GraphMessageID); err != nil {
			return m, err
		}
	}
	// A tenant's replies wait in the tenant's own send queue: the trace names the task the reply
	// was enqueued as; without a trace, the record names the tenant.
	switch target, ok := traceTarget(x.r.Trace, m.IdempotencyKey); {
	case ok && strings.Contains(target.TaskName, "/tasks/"):
		m.OutboundTask = in.taskNamed(ctx, target.TaskName)
	case m.Outbound != nil && m.Outbound.TenantID != "":
		m.OutboundTask = in.task(ctx, tasks.TenantQueueID(m.Outbound.TenantID), tasks.OutboundTaskID(mid))
	default:
		m.OutboundTask = in.task(ctx, or(in.OutboundQueue, tasks.OutboundQueueID), tasks.OutboundTaskID(mid))
	}
	if err := x.addDeadLetters(ctx, "", m.IdempotencyKey); err != nil {
		return m, err
	}
	// A conversation turn's further replies are under its ReplyKey ids.
	for i := 1; i < maxReplies; i++ {
		k, rec, err := x.reply(ctx, mid, i)
		if err != nil {
			return m, err
		}
		if rec == nil {
			break
		}
		m.Replies = append(m.Replies, ReplyReport{Index: i, IdempotencyKey: k, Outbound: rec})
		if err := x.addDeadLetters(ctx, "", k); err != nil {
			return m, err
		}
	}
	x.found = x.found || m.Outbound != nil || m.OutboundTask.Queued || len(m.Replies) > 0
	return m, nil
}

// eventReplies adds the event's other replies (an action's result, a later turn's reply) that no
// message of the report shows, and their dead letters.
func (x *inspection) eventReplies(ctx context.Context) error {
	r := x.r
	if r.InboundEventID == "" {
		return nil
	}
	shown := map[string]bool{}
	for _, m := range r.Messages {
		shown[m.IdempotencyKey] = true
		for _, rp := range m.Replies {
			shown[rp.IdempotencyKey] = true
		}
	}
	recs, err := x.in.Outbound.ListOutboundForEvent(ctx, r.InboundEventID, maxEventReplies)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if !shown[rec.IdempotencyKey] {
			r.EventReplies = append(r.EventReplies, rec)
			if err := x.addDeadLetters(ctx, "", rec.IdempotencyKey); err != nil {
				return err
			}
		}
	}
	return nil
}

// isDeadLetterID reports whether id has the shape of a dead letter's id (store.DocID: 64 hex
// digits), which no wamid, key or ref has.
func isDeadLetterID(id string) bool {
	if len(id) != 64 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// inspectAction reports the action id names: its record, the record of the message that told
// the user its result, and its task in the tenant's queue.
func (in *Inspector) inspectAction(ctx context.Context, id string) (*Report, error) {
	a, err := in.Actions.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w for action %s in project %s: no action record (expired, or another project)", ErrNothingFound, id, in.Conn.Project)
	}
	if err != nil {
		return nil, err
	}
	a.Reply = ""
	if a.ReplyKey == "" {
		a.ReplyKey = tasks.ActionReplyKey(in.keyer(), a.ActionID)
	}
	ar := &ActionReport{ActionRecord: a}
	if ar.ReplyRecord, err = in.outbound(ctx, a.ReplyKey); err != nil {
		return nil, err
	}
	ar.Task = in.task(ctx, tasks.TenantQueueID(a.TenantID), tasks.ActionTaskID(a.ActionID))
	// The event whose turn asked for the action, with the reply among its replies, when the
	// reply's record names it.
	if ar.ReplyRecord != nil && ar.ReplyRecord.InboundEventID != "" {
		r, err := in.Inspect(ctx, ar.ReplyRecord.InboundEventID)
		if err == nil {
			r.Query, r.Action = id, ar
			return r, nil
		}
		if !errors.Is(err, ErrNothingFound) {
			return nil, err
		}
	}
	r := &Report{Query: id, Messages: []MessageReport{}, DeadLetters: []DeadLetter{}, Action: ar}
	ds, err := in.DeadLetters.ListDeadLettersFor(ctx, "", ar.ReplyKey)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		r.DeadLetters = append(r.DeadLetters, ViewDeadLetter(in.Hasher, d))
	}
	return r, nil
}

// resolveRef returns the inbound_event_id an event_ref stands for, found on the event's dedupe
// marker or trace; any other query is returned as it is.
func (in *Inspector) resolveRef(ctx context.Context, query string) (string, error) {
	if !logging.IsRef(query) {
		return query, nil
	}
	m, err := in.Markers.GetMarkerByRef(ctx, query)
	if err == nil {
		return m.EventID, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	t, err := in.Traces.GetTraceByRef(ctx, query)
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

func (in *Inspector) marker(ctx context.Context, eventID string) (*store.Marker, error) {
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

// traceTarget returns the trace's record of the reply key's enqueue.
func traceTarget(t *store.Trace, key string) (store.TraceTarget, bool) {
	if t == nil {
		return store.TraceTarget{}, false
	}
	target, ok := t.Outbound[key]
	return target, ok
}

// task looks a task up by its deterministic name. A lookup failure is reported in the state, not
// returned: the Firestore side of the report is worth showing on its own.
func (in *Inspector) task(ctx context.Context, queue, id string) TaskState {
	return in.taskNamed(ctx, in.Tasks.TaskPath(queue, id))
}

// taskNamed looks a task up by its full name, as task does.
func (in *Inspector) taskNamed(ctx context.Context, name string) TaskState {
	st := TaskState{Name: name}
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
	writeActionPart(&b, r)
	p("inbound_event_id: %s", or(r.InboundEventID, "-"))
	p("event_ref: %s", or(r.EventRef, "-"))
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
	writeTracePart(&b, r)
	if r.InboundTask.Name != "" {
		writeTaskState(&b, "inbound task", r.InboundTask)
	}
	for _, s := range r.Statuses {
		p("status %s of %s: received %s, error code %d", s.Status, s.GraphMessageID, stamp(s.ReceivedAt), s.ErrorCode)
	}
	writeMessagesPart(&b, r)
	writeDeadLettersPart(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeActionPart writes the report's action, when the query named one.
func writeActionPart(b *strings.Builder, r *Report) {
	a := r.Action
	if a == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	p("action %s (%s): %s, intent %s, %d attempt(s), http status %d", a.ActionID, store.Actions, a.State, a.Intent, a.Attempts, a.HTTPStatus)
	p("  tenant %s, conversation %s, created %s, finished %s", a.TenantID, a.ConversationID, stamp(a.CreatedAt), stamp(a.FinishedAt))
	if a.LastError != "" {
		p("  last error: %s", oneLine(a.LastError))
	}
	writeOutbound(b, "  reply "+a.ReplyKey, a.ReplyRecord)
	writeTaskState(b, "  action task", a.Task)
	b.WriteString("\n")
}

// writeTracePart writes the report's inbound trace and its outbound enqueues.
func writeTracePart(b *strings.Builder, r *Report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	t := r.Trace
	if t == nil {
		p("trace (%s): none (not processed yet, or unknown)", store.InboundTraces)
		return
	}
	p("trace (%s): %s, attempt %d, %d message(s), %d status(es), correlation_id %s", store.InboundTraces,
		t.State, t.Attempt, t.Messages, t.Statuses, t.CorrelationID)
	p("  task: %s", or(t.TaskName, "-"))
	p("  received %s, started %s, finished %s", stamp(t.ReceivedAt), stamp(t.StartedAt), stamp(t.FinishedAt))
	if t.Error != "" {
		p("  error: %s", oneLine(t.Error))
	}
	for _, k := range slices.Sorted(maps.Keys(t.Outbound)) {
		o := t.Outbound[k]
		line := fmt.Sprintf("  outbound enqueue %s: %s (task %s)", k, o.Status, o.TaskName)
		if o.Error != "" {
			line += ": " + oneLine(o.Error)
		}
		p("%s", line)
	}
}

// writeMessagesPart writes each message of the event and the event's own replies.
func writeMessagesPart(b *strings.Builder, r *Report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	for _, m := range r.Messages {
		b.WriteString("\n")
		p("message %s", m.MessageID)
		p("  idempotency_key: %s", m.IdempotencyKey)
		writeOutbound(b, "  outbound record", m.Outbound)
		if len(m.Statuses) == 0 {
			p("  statuses: none")
		}
		for _, s := range m.Statuses {
			p("  status %s: received %s", s.Status, stamp(s.ReceivedAt))
		}
		writeTaskState(b, "  outbound task", m.OutboundTask)
		for _, rp := range m.Replies {
			writeOutbound(b, fmt.Sprintf("  reply %d %s", rp.Index, rp.IdempotencyKey), rp.Outbound)
		}
	}
	if len(r.EventReplies) > 0 {
		b.WriteString("\n")
	}
	for i := range r.EventReplies {
		rec := &r.EventReplies[i]
		writeOutbound(b, "reply "+rec.IdempotencyKey+" of this event", rec)
	}
}

// writeDeadLettersPart writes the event's dead letters.
func writeDeadLettersPart(b *strings.Builder, r *Report) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
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
}

// writeOutbound writes an outbound record (nil: none) under label.
func writeOutbound(b *strings.Builder, label string, o *store.OutboundRecord) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	if o == nil {
		p("%s (%s): none", label, store.OutboundMessages)
		return
	}
	p("%s (%s): %s, %d attempt(s), graph_message_id %s", label, store.OutboundMessages, o.State, o.Attempts, or(o.GraphMessageID, "-"))
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

// keyer is the Inspector's keyer: the development key's when none is set.
func (in *Inspector) keyer() *keyedid.Keyer {
	if in.Keyer == nil {
		return keyedid.Dev()
	}
	return in.Keyer
}

// reply returns the key and record of reply index of the turn of message mid: under its keyed
// key, else under the unkeyed one a reply recorded before keys were keyed has (record nil when
// there is neither; the key is then the keyed one).
func (x *inspection) reply(ctx context.Context, mid string, index int) (string, *store.OutboundRecord, error) {
	key := x.in.keyer().ReplyKey(mid, index)
	rec, err := x.in.outbound(ctx, key)
	if err != nil || rec != nil {
		return key, rec, err
	}
	legacy := tasks.LegacyReplyKey(mid, index)
	if rec, err = x.in.outbound(ctx, legacy); err != nil || rec != nil {
		return legacy, rec, err
	}
	return key, nil, nil
}
