package health

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Verdicts.
const (
	OK       = "ok"
	Degraded = "degraded"
	Failing  = "failing"
)

// Report is the health answer.
type Report struct {
	Status    string    `json:"status"`
	Reason    string    `json:"reason"`
	CheckedAt time.Time `json:"checked_at"`
	// Queues are the service's queues and every tenant's send queue (tasks.TenantQueuePrefix),
	// by queue id, each judged by the same thresholds.
	Queues      map[string]QueueStats `json:"queues"`
	Outbound    OutboundCounts        `json:"outbound"`
	DeadLetters int64                 `json:"dead_letters_pending"`
	LastHour    LastHour              `json:"last_hour"`
	// NeedsReauth are the tenants whose token was refused: their sends are parked.
	NeedsReauth []string `json:"tenants_needing_reauth,omitempty"`
	// RestrictedAccounts are the tenants whose WhatsApp Business Account Meta restricted,
	// disabled or removed wapipe from (account_update), each "id: what Meta said".
	RestrictedAccounts []string `json:"restricted_accounts,omitempty"`
	// TenantsOverQuota counts the tenants whose monthly LLM quota is used up (their assistants
	// answer with the quota notice); OverQuota names them.
	TenantsOverQuota int      `json:"tenants_over_quota"`
	OverQuota        []string `json:"over_quota,omitempty"`
}

// QueueStats is one queue's backlog, from Cloud Tasks.
type QueueStats struct {
	Tasks              int64   `json:"tasks"`
	OldestTaskAgeS     float64 `json:"oldest_task_age_s"`
	ExecutedLastMinute int64   `json:"executed_last_minute"`
	InFlight           int64   `json:"in_flight"`
	Paused             bool    `json:"paused"`
	Error              string  `json:"error,omitempty"`
}

// OutboundCounts are the outbound records by state that need attention.
type OutboundCounts struct {
	Pending int64 `json:"pending"`
	Sending int64 `json:"sending"`
	Failed  int64 `json:"failed"`
}

// LastHour summarises the sends of the last hour.
type LastHour struct {
	Sent        int64   `json:"sent"`
	Failed      int64   `json:"failed"`
	SuccessRate float64 `json:"success_rate"`
	// LatencyP50MS and LatencyP95MS are webhook-to-sent latencies, interpolated within
	// store.LatencyBounds buckets.
	LatencyP50MS float64 `json:"latency_p50_ms"`
	LatencyP95MS float64 `json:"latency_p95_ms"`
}

// Thresholds decide the verdict.
type Thresholds struct {
	// BacklogAge over which a queue is degraded, and failing at 5x.
	BacklogAge time.Duration
	// MinSuccessRate under which sends are degraded (failing under half of it).
	MinSuccessRate float64
	// MaxP95 over which latency is degraded.
	MaxP95 time.Duration
}

// DefaultThresholds suit a bot that should answer within seconds.
var DefaultThresholds = Thresholds{BacklogAge: 2 * time.Minute, MinSuccessRate: 0.95, MaxP95: 30 * time.Second}

// OutboundCounter counts outbound records; *store.Outbound implements it.
type OutboundCounter interface {
	CountOutboundByState(ctx context.Context, state string) (int64, error)
	CountSentSince(ctx context.Context, since time.Time) (int64, error)
	CountFailedSince(ctx context.Context, since time.Time) (int64, error)
	CountSentInLatencyBucket(ctx context.Context, bucket int, since time.Time) (int64, error)
}

// DeadLetterCounter counts the dead letters waiting; *store.DeadLetterStore implements it.
type DeadLetterCounter interface {
	CountPending(ctx context.Context) (int64, error)
}

// QueueStatser reads a queue's backlog; *taskqueue.Admin implements it.
type QueueStatser interface {
	QueueStats(ctx context.Context, queue string) (taskqueue.QueueStats, error)
}

// TenantLister lists the tenants, whose send queues the report includes; *store.Tenants
// implements it.
type TenantLister interface {
	List(ctx context.Context) ([]store.TenantRecord, error)
}

// Checker computes reports.
type Checker struct {
	outbound    OutboundCounter
	deadLetters DeadLetterCounter
	tc          QueueStatser
	queues      []string
	thresholds  Thresholds
	now         func() time.Time
	reauth      ReauthLister
	quota       QuotaLister
	accounts    AccountLister
	tenants     TenantLister
}

// Options adjust a Checker; zero values take the defaults.
type Options struct {
	Thresholds Thresholds
	Now        func() time.Time
	// Reauth lists the tenants needing a new token (*store.Tenants); not reported when nil.
	Reauth ReauthLister
	// Quota lists the tenants over their monthly LLM quota (store.QuotaReport); not reported
	// when nil.
	Quota QuotaLister
	// Accounts lists the tenants whose WhatsApp Business Account is restricted (*store.Tenants);
	// not reported when nil.
	Accounts AccountLister
	// Tenants lists the tenants: each one's send queue (tasks.TenantQueueID) is reported beside
	// the named queues; not reported when nil.
	Tenants TenantLister
}

// AccountLister names the tenants whose account Meta restricted; *store.Tenants implements it.
type AccountLister interface {
	RestrictedAccounts(ctx context.Context) ([]string, error)
}

// QuotaLister lists the tenants whose monthly LLM quota is used up at now.
type QuotaLister interface {
	TenantsOverQuota(ctx context.Context, now time.Time) ([]string, error)
}

// ReauthLister lists the tenants whose auth_status is needs_reauth; *store.Tenants implements it.
type ReauthLister interface {
	NeedsReauth(ctx context.Context) ([]string, error)
}

// New returns a Checker over the records and the given queues (full resource names).
func New(outbound OutboundCounter, deadLetters DeadLetterCounter, tc QueueStatser, queues []string, opts ...Options) *Checker {
	c := &Checker{outbound: outbound, deadLetters: deadLetters, tc: tc, queues: queues, thresholds: DefaultThresholds, now: time.Now}
	for _, o := range opts {
		if o.Thresholds != (Thresholds{}) {
			c.thresholds = o.Thresholds
		}
		if o.Now != nil {
			c.now = o.Now
		}
		if o.Reauth != nil {
			c.reauth = o.Reauth
		}
		if o.Quota != nil {
			c.quota = o.Quota
		}
		if o.Accounts != nil {
			c.accounts = o.Accounts
		}
		if o.Tenants != nil {
			c.tenants = o.Tenants
		}
	}
	return c
}

// Check computes the report. Its parts are fetched concurrently; a part that fails makes the
// verdict failing with the error as reason, never a half-silent ok.
func (c *Checker) Check(ctx context.Context) (Report, error) {
	now := c.now()
	r := Report{CheckedAt: now.UTC(), Queues: map[string]QueueStats{}}
	f := &fetches{}
	since := now.Add(-time.Hour)
	c.fetchQueues(ctx, f, &r, now)
	buckets := c.fetchOutbound(ctx, f, &r, since)
	c.fetchTenants(ctx, f, &r, now)
	errs := f.wait()

	if total := r.LastHour.Sent + r.LastHour.Failed; total > 0 {
		r.LastHour.SuccessRate = float64(r.LastHour.Sent) / float64(total)
	} else {
		r.LastHour.SuccessRate = 1
	}
	r.LastHour.LatencyP50MS = percentile(buckets, 0.50)
	r.LastHour.LatencyP95MS = percentile(buckets, 0.95)
	c.judge(&r, errs)
	return r, errors.Join(errs...)
}

// fetches runs the report's parts concurrently and collects their errors; mu also guards the
// report's maps and slices the parts fill.
type fetches struct {
	mu   sync.Mutex
	wg   sync.WaitGroup
	errs []error
}

// run starts f.
func (fs *fetches) run(f func() error) {
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		if err := f(); err != nil {
			fs.mu.Lock()
			fs.errs = append(fs.errs, err)
			fs.mu.Unlock()
		}
	}()
}

// count runs f, which stores its count in dst.
func (fs *fetches) count(dst *int64, f func() (int64, error)) {
	fs.run(func() error {
		n, err := f()
		*dst = n
		return err
	})
}

// wait waits for every part and returns their errors.
func (fs *fetches) wait() []error {
	fs.wg.Wait()
	return fs.errs
}

// fetchQueues fetches each queue's stats into r.Queues.
func (c *Checker) fetchQueues(ctx context.Context, f *fetches, r *Report, now time.Time) {
	// fetch reads queue name's stats into r.Queues[id].
	fetch := func(name, id string) {
		f.run(func() error {
			st, err := c.queueStats(ctx, name, now)
			f.mu.Lock()
			r.Queues[id] = st
			f.mu.Unlock()
			return err
		})
	}
	for _, q := range c.queues {
		fetch(q, q[strings.LastIndex(q, "/")+1:])
	}
	if c.tenants == nil {
		return
	}
	// The tenants' queues, read by name (as the grants allow: a condition on the queue's name,
	// no listing of the location's queues), once the tenants are known.
	f.run(func() error {
		recs, err := c.tenants.List(ctx)
		if err != nil {
			return fmt.Errorf("list tenants for their queues: %w", err)
		}
		for _, rec := range recs {
			id := tasks.TenantQueueID(rec.Tenant.ID)
			fetch(id, id)
		}
		return nil
	})
}

// fetchOutbound fetches the outbound records' and dead letters' counts into r; the returned
// latency buckets of the last hour are filled once f is waited for.
func (c *Checker) fetchOutbound(ctx context.Context, f *fetches, r *Report, since time.Time) []int64 {
	for _, s := range []struct {
		dst   *int64
		state string
	}{
		{&r.Outbound.Pending, store.OutboundPending},
		{&r.Outbound.Sending, store.OutboundSending},
		{&r.Outbound.Failed, store.OutboundFailed},
	} {
		f.count(s.dst, func() (int64, error) { return c.outbound.CountOutboundByState(ctx, s.state) })
	}
	f.count(&r.DeadLetters, func() (int64, error) { return c.deadLetters.CountPending(ctx) })
	f.count(&r.LastHour.Sent, func() (int64, error) { return c.outbound.CountSentSince(ctx, since) })
	f.count(&r.LastHour.Failed, func() (int64, error) { return c.outbound.CountFailedSince(ctx, since) })
	buckets := make([]int64, len(store.LatencyBounds)+1)
	for i := range buckets {
		f.count(&buckets[i], func() (int64, error) { return c.outbound.CountSentInLatencyBucket(ctx, i, since) })
	}
	return buckets
}

// fetchTenants fetches, where configured, the tenants over quota, needing reauth and the
// restricted accounts into r.
func (c *Checker) fetchTenants(ctx context.Context, f *fetches, r *Report, now time.Time) {
	if c.quota != nil {
		f.run(func() error {
			ids, err := c.quota.TenantsOverQuota(ctx, now)
			f.mu.Lock()
			r.OverQuota, r.TenantsOverQuota = ids, len(ids)
			f.mu.Unlock()
			return err
		})
	}
	if c.reauth != nil {
		f.run(func() error {
			ids, err := c.reauth.NeedsReauth(ctx)
			f.mu.Lock()
			r.NeedsReauth = ids
			f.mu.Unlock()
			return err
		})
	}
	if c.accounts != nil {
		f.run(func() error {
			names, err := c.accounts.RestrictedAccounts(ctx)
			f.mu.Lock()
			r.RestrictedAccounts = names
			f.mu.Unlock()
			return err
		})
	}
}

func (c *Checker) queueStats(ctx context.Context, name string, now time.Time) (QueueStats, error) {
	q, err := c.tc.QueueStats(ctx, name)
	if err != nil {
		return QueueStats{Error: "unavailable"}, err
	}
	return queueStats(q, now), nil
}

// queueStats is the report's view of a queue's stats at now: the oldest task's age in seconds.
func queueStats(q taskqueue.QueueStats, now time.Time) QueueStats {
	st := QueueStats{Paused: q.Paused, Tasks: q.Tasks, ExecutedLastMinute: q.ExecutedLastMinute, InFlight: q.InFlight}
	if !q.OldestArrival.IsZero() && st.Tasks > 0 {
		if age := now.Sub(q.OldestArrival); age > 0 {
			st.OldestTaskAgeS = age.Seconds()
		}
	}
	return st
}

// queueIDs are the ids of the report's queues, sorted.
func (r Report) queueIDs() []string {
	ids := make([]string, 0, len(r.Queues))
	for id := range r.Queues {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// oldestAge is the age of the queue's oldest task.
func (q QueueStats) oldestAge() time.Duration {
	return time.Duration(q.OldestTaskAgeS * float64(time.Second))
}

// percentile interpolates linearly within the bucket that holds the p-th quantile.
func percentile(buckets []int64, p float64) float64 {
	var total int64
	for _, n := range buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	target := p * float64(total)
	var cum float64
	for i, n := range buckets {
		if n == 0 {
			continue
		}
		lo, hi := 0.0, 0.0
		if i > 0 {
			lo = float64(store.LatencyBounds[i-1])
		}
		if i < len(store.LatencyBounds) {
			hi = float64(store.LatencyBounds[i])
		} else {
			hi = lo * 2
		}
		if cum+float64(n) >= target {
			return lo + (hi-lo)*(target-cum)/float64(n)
		}
		cum += float64(n)
	}
	return float64(store.LatencyBounds[len(store.LatencyBounds)-1])
}

// judge sets the verdict: failing beats degraded beats ok; every reason is listed.
func (c *Checker) judge(r *Report, errs []error) {
	var failing, degraded []string
	for _, err := range errs {
		failing = append(failing, "check failed: "+err.Error())
	}
	for _, id := range r.queueIDs() {
		q := r.Queues[id]
		age := q.oldestAge()
		switch {
		case q.Paused:
			failing = append(failing, fmt.Sprintf("queue %s is paused", id))
		case age > 5*c.thresholds.BacklogAge:
			failing = append(failing, fmt.Sprintf("queue %s: oldest task waiting %s", id, age.Round(time.Second)))
		case age > c.thresholds.BacklogAge:
			degraded = append(degraded, fmt.Sprintf("queue %s: backlog of %d, oldest waiting %s", id, q.Tasks, age.Round(time.Second)))
		}
	}
	lh := r.LastHour
	switch {
	case lh.Sent+lh.Failed >= 10 && lh.SuccessRate < c.thresholds.MinSuccessRate/2:
		failing = append(failing, fmt.Sprintf("send success rate %.0f%% in the last hour", 100*lh.SuccessRate))
	case lh.Failed > 0 && lh.SuccessRate < c.thresholds.MinSuccessRate:
		degraded = append(degraded, fmt.Sprintf("send success rate %.0f%% in the last hour (%d failed)", 100*lh.SuccessRate, lh.Failed))
	}
	if len(r.RestrictedAccounts) > 0 {
		degraded = append(degraded, fmt.Sprintf("WhatsApp accounts restricted by Meta (messaging stopped): %s", strings.Join(r.RestrictedAccounts, "; ")))
	}
	if len(r.NeedsReauth) > 0 {
		degraded = append(degraded, fmt.Sprintf("tenants needing a new token (sends parked): %s", strings.Join(r.NeedsReauth, ", ")))
	}
	if r.DeadLetters > 0 {
		degraded = append(degraded, fmt.Sprintf("%d dead letters waiting for replay", r.DeadLetters))
	}
	if p95 := time.Duration(lh.LatencyP95MS * float64(time.Millisecond)); p95 > c.thresholds.MaxP95 {
		degraded = append(degraded, fmt.Sprintf("webhook-to-sent p95 %s in the last hour", p95.Round(time.Millisecond)))
	}
	switch {
	case len(failing) > 0:
		r.Status, r.Reason = Failing, strings.Join(append(failing, degraded...), "; ")
	case len(degraded) > 0:
		r.Status, r.Reason = Degraded, strings.Join(degraded, "; ")
	default:
		r.Status, r.Reason = OK, "queues flowing, sends succeeding"
	}
}

// ForStore is the checker of the report every service shows (the worker's /internal/health, the
// console's overview, `wapipe health --direct`), on the stores of db: sends, dead letters, and the
// tenants needing a token, over quota or restricted by Meta; queueNames are the queues to report.
// Every tenant's send queue is reported beside them.
func ForStore(db *store.DB, queues QueueStatser, queueNames []string) *Checker {
	tenants := store.NewTenants(db, store.Options{})
	return New(store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{}), queues, queueNames,
		Options{Reauth: tenants, Quota: store.QuotaReport{Tenants: tenants, Guard: store.NewGuard(db, store.Options{})}, Accounts: tenants,
			Tenants: tenants})
}
