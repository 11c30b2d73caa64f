package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// deadLetterStore is what replaying needs of the dead letters; *store.DeadLetterStore implements
// it.
type deadLetterStore interface {
	ListDeadLetters(ctx context.Context, onlyPending bool, limit int) ([]store.DeadLetter, error)
	GetDeadLetter(ctx context.Context, id string) (store.DeadLetter, error)
	MarkReplayed(ctx context.Context, id string) error
}

// outboundStore is what replaying needs of the outbound records; *store.Outbound implements it.
type outboundStore interface {
	GetOutbound(ctx context.Context, key string) (store.OutboundRecord, error)
	ReopenOutbound(ctx context.Context, key string) error
}

// enqueuer creates tasks; *taskqueue.Client implements it.
type enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// Replayer re-enqueues dead letters.
type Replayer struct {
	DeadLetters deadLetterStore
	Outbound    outboundStore
	Tasks       enqueuer
	// Keyer makes an action's result key (LOG_HASH_KEY's); the development key's when nil.
	Keyer *keyedid.Keyer
	// Invokers are the service accounts a replay's task acts as, by worker route path: the
	// route's own enqueuer's invoker, the only one the worker admits on it (ROUTE_CALLERS). A
	// route without one is replayed as the client's own account.
	Invokers map[string]string
	// Now is time.Now when nil.
	Now func() time.Time
}

// ReplayFilter selects dead letters for --all.
type ReplayFilter struct {
	// Queue is a queue id; empty matches all.
	Queue string
	// Path is a worker route ("/internal/process_outbound" or "process_outbound"); empty matches
	// all.
	Path string
	// Since keeps dead letters created at or after it; zero keeps all.
	Since time.Time
	// IncludeReplayed also selects dead letters replayed before.
	IncludeReplayed bool
	// Limit caps how many are read; 0 means 1000.
	Limit int
}

// Select returns the dead letters to replay, oldest first: the ones named by ids, or with all,
// those matching f.
func (r *Replayer) Select(ctx context.Context, ids []string, all bool, f ReplayFilter) ([]store.DeadLetter, error) {
	if all == (len(ids) > 0) {
		return nil, errors.New("give either dead letter ids or --all")
	}
	var out []store.DeadLetter
	if !all {
		for _, id := range ids {
			d, err := r.DeadLetters.GetDeadLetter(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("dead letter %s: not found", id)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	ds, err := r.DeadLetters.ListDeadLetters(ctx, !f.IncludeReplayed, limit)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if f.matches(d) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

func (f ReplayFilter) matches(d store.DeadLetter) bool {
	if f.Queue != "" && tasks.QueueID(d.Queue) != tasks.QueueID(f.Queue) {
		return false
	}
	if f.Path != "" && d.Path != f.Path && d.Path != "/internal/"+strings.TrimPrefix(f.Path, "/") {
		return false
	}
	if !f.Since.IsZero() && d.CreatedAt.Before(f.Since) {
		return false
	}
	return true
}

// ReplayResult says what Replay did with one dead letter.
type ReplayResult struct {
	DeadLetterID string `json:"dead_letter_id"`
	Queue        string `json:"queue"`
	Path         string `json:"path"`
	Task         string `json:"task"`
	// Existed is true when the replay task existed already (a replay done before): nothing new
	// was created.
	Existed bool `json:"existed"`
	// RecordState is the outbound record's state before the replay ("" for an inbound task or
	// when there is no record); Reopened says a failed record was made pending so it may send.
	RecordState string `json:"record_state,omitempty"`
	Reopened    bool   `json:"reopened"`
	DryRun      bool   `json:"dry_run,omitempty"`
}

// Replay re-enqueues one dead letter: for one whose task sends a record it reopens a failed
// record first (a sent record stays sent, so the replay cannot answer twice), then creates the
// replay task and marks the dead letter replayed. With dryRun it only says what it would do.
// Its route's row of tasks.Routes says which queue and which record (replayQueue, ReplayRecord).
func (r *Replayer) Replay(ctx context.Context, d store.DeadLetter, dryRun bool) (ReplayResult, error) {
	route, queue, err := replayQueue(d)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("dead letter %s: %w", d.ID, err)
	}
	res := ReplayResult{DeadLetterID: d.ID, Queue: queue, Path: d.Path, Task: tasks.ReplayTaskID(d.ID), DryRun: dryRun}
	if key, legacy := route.ReplayRecord(r.keyer(), d.IdempotencyKey, []byte(d.Body)); key != "" {
		if err := r.reopen(ctx, &res, key, legacy, dryRun); err != nil {
			return res, fmt.Errorf("dead letter %s: %w", d.ID, err)
		}
	}
	if dryRun {
		return res, nil
	}
	created, err := r.Tasks.Enqueue(ctx, taskqueue.Task{
		Queue:         queue,
		ID:            res.Task,
		Path:          d.Path,
		Body:          []byte(d.Body),
		CorrelationID: d.CorrelationID,
		Invoker:       r.Invokers[d.Path],
	})
	if err != nil {
		return res, fmt.Errorf("dead letter %s: %w", d.ID, err)
	}
	res.Task, res.Existed = created.Name, created.Existed
	if err := r.DeadLetters.MarkReplayed(ctx, d.ID); err != nil {
		return res, fmt.Errorf("dead letter %s: the replay task exists but: %w", d.ID, err)
	}
	return res, nil
}

// reopen reads the record key (else legacy, its unkeyed key before keys were keyed) into res and
// makes it pending when it failed, unless dryRun. No record is not an error: nothing to reopen.
func (r *Replayer) reopen(ctx context.Context, res *ReplayResult, key, legacy string, dryRun bool) error {
	rec, err := r.Outbound.GetOutbound(ctx, key)
	if errors.Is(err, store.ErrNotFound) && legacy != "" {
		if rec, err = r.Outbound.GetOutbound(ctx, legacy); err == nil {
			key = legacy
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	res.RecordState = rec.State
	if !rec.Reopenable() {
		return nil
	}
	res.Reopened = true
	if dryRun {
		return nil
	}
	if err := r.Outbound.ReopenOutbound(ctx, key); err != nil {
		return fmt.Errorf("reopen outbound record: %w", err)
	}
	return nil
}

// replayQueue is d's route and queue: the queue the worker learned, or the one its route's row
// says feeds a task of its body when it did not (a task dispatched without Cloud Tasks' headers).
func replayQueue(d store.DeadLetter) (tasks.Route, string, error) {
	route, ok := tasks.TaskRoute(d.Path)
	switch {
	case !ok:
		return route, "", fmt.Errorf("unknown worker route %q", d.Path)
	case d.Body == "":
		return route, "", errors.New("no task body to replay")
	case d.Queue != "":
		return route, tasks.QueueID(d.Queue), nil
	}
	queue, err := route.QueueOf([]byte(d.Body))
	return route, queue, err
}

func (r *Replayer) keyer() *keyedid.Keyer {
	if r.Keyer == nil {
		return keyedid.Dev()
	}
	return r.Keyer
}
