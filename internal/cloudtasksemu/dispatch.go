package cloudtasksemu

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/wapipe/wapipe/tasks"
)

// The headers Cloud Tasks sets on every HTTP task request (and the task may not set itself),
// named once in the task contract.
const (
	headerQueueName        = tasks.HeaderQueueName
	headerTaskName         = tasks.HeaderTaskName
	headerRetryCount       = tasks.HeaderTaskRetryCount
	headerExecutionCount   = tasks.HeaderTaskExecCount
	headerETA              = tasks.HeaderTaskETA
	headerPreviousResponse = tasks.HeaderPreviousResp
	headerRetryReason      = tasks.HeaderTaskRetryReason
	userAgent              = "Google-Cloud-Tasks"
)

// maxResponseDrain bounds how much of a worker's answer is read (and thrown away) so the
// connection can be reused.
const maxResponseDrain = 1 << 20

// dispatch is one attempt, with what the request needs copied under the queue's lock.
type dispatch struct {
	q          *queue
	t          *task
	a          *attempt
	retryCount int32
	execCount  int32
	eta        int64
	prevStatus int32 // the previous attempt's HTTP status, 0 if none or no response
	prevCode   int32 // the previous attempt's google.rpc.Code
}

// doDispatch sends the request, then records the outcome: a 2xx completes the task, anything else
// (or no answer within the dispatch deadline) schedules a retry unless the retry limits are both
// reached.
func (s *Server) doDispatch(d dispatch) {
	httpStatus, retryAfter, errMsg := s.send(d)
	if s.ctx.Err() != nil {
		// Stopping: the attempt was cut short by Stop, not by the worker.
		return
	}
	now := time.Now()
	nowNs := now.UnixNano()
	q, t := d.q, d.t

	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.poke()
	q.inflight--
	t.running--
	d.a.response = nowNs
	d.a.httpStatus = int32(httpStatus)
	d.a.code = int32(codeForHTTP(httpStatus, errMsg))
	d.a.errMsg = errMsg
	if httpStatus != 0 {
		t.responseCount++
		if httpStatus < 500 || httpStatus > 599 {
			t.execCount++
		}
		q.recordExecuted(nowNs)
	}
	if q.tasks[t.id] != t {
		return // deleted or purged while in flight
	}
	// Building a logger per attempt would cost allocations on the hot path, so only when logged.
	log := func(level slog.Level, msg, event string, attrs ...slog.Attr) {
		if !s.log.Enabled(context.Background(), level) {
			return
		}
		attrs = append(attrs, slog.String("event", event), slog.String("queue", q.id), slog.String("task", t.id),
			slog.Int("attempt", int(d.retryCount)+1), slog.Int("status", httpStatus))
		s.log.LogAttrs(context.Background(), level, msg, attrs...)
	}
	if httpStatus >= 200 && httpStatus <= 299 {
		log(slog.LevelDebug, "task completed", "task_completed")
		q.removeTask(t, nowNs, s.opts.NameReservation)
		return
	}
	if t.running > 0 || t.heapIdx >= 0 {
		return // a RunTask attempt still in flight decides what happens next
	}
	policy := q.cfg.retry
	if t.retry != nil {
		policy = *t.retry
	}
	age := time.Duration(nowNs - t.firstDispatch)
	if retriesExhausted(policy, t.dispatchCount, age) {
		log(slog.LevelWarn, "task given up after its last attempt", "task_exhausted", slog.String("error", errMsg))
		q.removeTask(t, nowNs, s.opts.NameReservation)
		return
	}
	delay := backoff(policy, int(t.dispatchCount))
	// Cloud Tasks "considers" Retry-After on 429 and 503: never retry sooner than the worker asked.
	if (httpStatus == http.StatusTooManyRequests || httpStatus == http.StatusServiceUnavailable) && retryAfter > delay {
		delay = retryAfter
	}
	t.schedule = nowNs + int64(delay)
	q.enqueue(t)
	log(slog.LevelDebug, "task will be retried", "task_retry", slog.Duration("backoff", delay), slog.String("error", errMsg))
}

// send performs the HTTP request and returns the status (0 when no response arrived), the
// response's Retry-After, and a description of the failure when there was no response.
func (s *Server) send(d dispatch) (httpStatus int, retryAfter time.Duration, errMsg string) {
	t := d.t
	ctx, cancel := context.WithTimeout(s.ctx, t.deadline)
	defer cancel()

	var body io.Reader
	if len(t.body) > 0 {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, methodName(t.method), t.url, body)
	if err != nil {
		return 0, 0, "build request: " + err.Error()
	}
	h := req.Header
	for i := 0; i+1 < len(t.headers); i += 2 {
		if !isReservedHeader(t.headers[i]) {
			h.Set(t.headers[i], t.headers[i+1])
		}
	}
	h.Set("User-Agent", userAgent)
	h.Set(headerQueueName, d.q.id)
	h.Set(headerTaskName, t.id)
	h.Set(headerRetryCount, strconv.Itoa(int(d.retryCount)))
	h.Set(headerExecutionCount, strconv.Itoa(int(d.execCount)))
	h.Set(headerETA, formatETA(d.eta))
	if d.retryCount > 0 {
		if d.prevStatus != 0 {
			h.Set(headerPreviousResponse, strconv.Itoa(int(d.prevStatus)))
		}
		// The values Cloud Tasks sends here are not documented; the emulator names the previous
		// attempt's outcome as a google.rpc.Code.
		h.Set(headerRetryReason, codes.Code(d.prevCode).String())
	}
	if t.oidc != nil {
		aud := t.oidc.GetAudience()
		if aud == "" {
			aud = t.url
		}
		tok, err := s.issuer.token(t.oidc.GetServiceAccountEmail(), aud)
		if err != nil {
			return 0, 0, "sign OIDC token: " + err.Error()
		}
		h.Set("Authorization", "Bearer "+tok)
	}

	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, 0, "dispatch deadline exceeded"
		}
		return 0, 0, err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseDrain))
	return resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()), ""
}

// isReservedHeader reports headers Cloud Tasks computes or keeps for itself, which a task's own
// headers cannot set.
func isReservedHeader(k string) bool {
	k = http.CanonicalHeaderKey(k)
	switch k {
	case "Host", "Content-Length", "User-Agent", "Transfer-Encoding", "Connection":
		return true
	}
	return strings.HasPrefix(k, "X-Cloudtasks-") || strings.HasPrefix(k, "X-Google-") ||
		strings.HasPrefix(k, "X-Appengine-")
}

// formatETA writes a schedule time as Cloud Tasks does: seconds since the epoch with microseconds.
func formatETA(ns int64) string {
	sec, us := ns/int64(time.Second), (ns%int64(time.Second))/int64(time.Microsecond)
	us6 := strconv.FormatInt(us+1_000_000, 10)[1:]
	return strconv.FormatInt(sec, 10) + "." + us6
}

// parseRetryAfter reads delay-seconds or an HTTP date; zero when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// codeForHTTP maps an HTTP status to the google.rpc.Code Cloud Tasks reports in
// Attempt.response_status, following google/rpc/code.proto's HTTP mapping.
func codeForHTTP(httpStatus int, errMsg string) codes.Code {
	switch {
	case httpStatus == 0 && strings.Contains(errMsg, "deadline"):
		return codes.DeadlineExceeded
	case httpStatus == 0:
		return codes.Unavailable
	case httpStatus >= 200 && httpStatus <= 299:
		return codes.OK
	}
	switch httpStatus {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.NotFound
	case http.StatusConflict:
		return codes.Aborted
	case http.StatusRequestedRangeNotSatisfiable:
		return codes.OutOfRange
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	switch {
	case httpStatus >= 400 && httpStatus <= 499:
		return codes.FailedPrecondition
	case httpStatus >= 500 && httpStatus <= 599:
		return codes.Internal
	}
	return codes.Unknown
}
