package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

const replayUsage = `Usage: wapipe replay --id ID [--id ID…] [flags]
       wapipe replay --all [--queue Q] [--path P] [--since 24h] [flags]

Re-enqueues dead letters (Firestore dead_letters) on their queue, to the worker at
INTERNAL_TASK_BASE_URL with INTERNAL_TASK_TOKEN. It never creates duplicates: the replay task's id
is derived from the dead letter's id, so a second replay meets AlreadyExists and creates nothing.
For an outbound dead letter a failed record is reopened first; a sent record is never reopened, so
a replay can never answer twice. Each replayed dead letter is then marked replayed. --all selects
the dead letters not replayed yet; --dry-run only lists what would be replayed.`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", replayUsage)
	var (
		c                     connFlags
		ids                   stringList
		all, dryRun, asJSON   bool
		filter                operator.ReplayFilter
		since, baseURL, token string
		serviceAccount        string
	)
	c.register(fs)
	fs.Var(&ids, "id", "dead letter id to replay (repeatable; ids may also be given as arguments)")
	fs.BoolVar(&all, "all", false, "replay every dead letter not replayed yet that matches the filters")
	fs.StringVar(&filter.Queue, "queue", "", "with --all: only dead letters of this queue id")
	fs.StringVar(&filter.Path, "path", "", "with --all: only dead letters of this worker route (/internal/process_outbound or process_outbound)")
	fs.StringVar(&since, "since", "", "with --all: only dead letters created since this long ago (24h) or this time (RFC 3339)")
	fs.BoolVar(&filter.IncludeReplayed, "include-replayed", false, "with --all: also dead letters replayed before")
	fs.IntVar(&filter.Limit, "limit", 1000, "with --all: read at most this many dead letters")
	fs.BoolVar(&dryRun, "dry-run", false, "list what would be replayed; change nothing")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&baseURL, "base-url", os.Getenv("INTERNAL_TASK_BASE_URL"), "the worker's base URL for the replay task (env INTERNAL_TASK_BASE_URL)")
	fs.StringVar(&token, "token", "", "X-Internal-Token of the replay task (default: env INTERNAL_TASK_TOKEN)")
	fs.StringVar(&serviceAccount, "service-account", os.Getenv("TASKS_SERVICE_ACCOUNT_EMAIL"), "attach an OIDC token for this service account (env TASKS_SERVICE_ACCOUNT_EMAIL)")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	ids = append(ids, pos...)
	if all == (len(ids) > 0) {
		return usageErrorf("give either --id ID (or IDs as arguments) or --all")
	}
	if !all && (filter.Queue != "" || filter.Path != "" || since != "") {
		return usageErrorf("--queue, --path and --since filter --all")
	}
	if filter.Since, err = parseSince(since, time.Now()); err != nil {
		return usageError{err.Error()}
	}
	if token == "" {
		token = os.Getenv("INTERNAL_TASK_TOKEN")
	}
	if !dryRun && (baseURL == "" || token == "") {
		return usageErrorf("the replay task needs the worker's base URL and token: set INTERNAL_TASK_BASE_URL and INTERNAL_TASK_TOKEN (or --base-url, --token)")
	}
	if err := c.resolve(); err != nil {
		return err
	}
	db, err := c.store(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	tq, err := taskqueue.New(ctx, taskqueue.Config{
		ProjectID: c.conn.Project, Location: c.conn.Location, EmulatorHost: c.conn.TasksEmulatorHost,
		BaseURL: baseURL, Token: token, ServiceAccountEmail: serviceAccount,
	})
	if err != nil {
		return fmt.Errorf("taskqueue.New: %w", err)
	}
	defer tq.Close()

	r := &operator.Replayer{DeadLetters: store.NewDeadLetters(db, store.Options{}), Outbound: store.NewOutbound(db, store.Options{}), Tasks: tq,
		Keyer: db.Keyer()}
	dls, err := r.Select(ctx, ids, all, filter)
	if err != nil {
		return err
	}
	return replayDeadLetters(ctx, r, dls, dryRun, asJSON, stdout, stderr)
}

// replayDeadLetters replays dls one by one, says what became of each, and fails naming the first
// that was not replayed.
func replayDeadLetters(ctx context.Context, r *operator.Replayer, dls []store.DeadLetter, dryRun, asJSON bool, stdout, stderr io.Writer) error {
	results := []operator.ReplayResult{}
	var errs []error
	for i, d := range dls {
		res, err := r.Replay(ctx, d, dryRun)
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(stderr, "replay %d/%d: %s\n", i+1, len(dls), oneLine(err.Error()))
			continue
		}
		results = append(results, res)
		if !asJSON {
			io.WriteString(stdout, describeReplay(res)+"\n")
		}
	}
	if asJSON {
		if err := operator.WriteJSON(stdout, results); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, summarizeReplays(results, len(dls), dryRun))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d dead letters not replayed; first: %w", len(errs), len(dls), errs[0])
	}
	return nil
}

func describeReplay(r operator.ReplayResult) string {
	var b strings.Builder
	verb := "replayed"
	switch {
	case r.DryRun:
		verb = "would replay"
	case r.Existed:
		verb = "already replayed"
	}
	fmt.Fprintf(&b, "%s %s (%s %s) as task %s", verb, r.DeadLetterID, r.Queue, r.Path, r.Task)
	switch {
	case r.Path != tasks.ProcessOutboundPath && r.Path != tasks.ProcessSendPath && r.Path != tasks.ProcessActionPath:
		// An inbound delivery has no outbound record.
	case r.RecordState == "":
		b.WriteString("; no outbound record yet")
	case r.Reopened && r.DryRun:
		b.WriteString("; outbound record failed: would reopen it")
	case r.Reopened:
		b.WriteString("; outbound record failed: reopened")
	default:
		fmt.Fprintf(&b, "; outbound record %s: left as it is", r.RecordState)
		if r.RecordState == store.OutboundSent {
			b.WriteString(" (the reply went out: the replay sends nothing)")
		}
	}
	return b.String()
}

func summarizeReplays(rs []operator.ReplayResult, selected int, dryRun bool) string {
	if selected == 0 {
		return "no dead letter to replay"
	}
	if dryRun {
		return fmt.Sprintf("%d dead letter(s) would be replayed (dry run: nothing changed)", len(rs))
	}
	created := 0
	for _, r := range rs {
		if !r.Existed {
			created++
		}
	}
	return fmt.Sprintf("%d dead letter(s): %d task(s) created, %d already existed", len(rs), created, len(rs)-created)
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("--since: want a positive duration")
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since %q: want a duration such as 24h or an RFC 3339 time", s)
	}
	return t, nil
}
