package operator

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// maskedHeaders are never shown: they carry credentials.
var maskedHeaders = map[string]bool{
	strings.ToLower(tasks.HeaderInternalToken): true,
	"authorization":       true,
	"x-hub-signature-256": true,
}

// Masked stands in for a credential.
const Masked = "********"

// Task is a Cloud Tasks task as an operator reads it: credentials masked, the body (FULL view
// only) decoded and redacted.
type Task struct {
	Name          string            `json:"name"`
	ID            string            `json:"id"`
	Queue         string            `json:"queue"`
	CreateTime    time.Time         `json:"create_time,omitzero"`
	ScheduleTime  time.Time         `json:"schedule_time,omitzero"`
	DispatchCount int32             `json:"dispatch_count"`
	ResponseCount int32             `json:"response_count"`
	FirstAttempt  time.Time         `json:"first_attempt_dispatch_time,omitzero"`
	LastAttempt   *Attempt          `json:"last_attempt,omitempty"`
	Method        string            `json:"http_method,omitempty"`
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	// OIDCServiceAccount is the account Cloud Tasks signs an OIDC token for, if any.
	OIDCServiceAccount string `json:"oidc_service_account,omitempty"`
	DispatchDeadline   string `json:"dispatch_deadline,omitempty"`
	// Body is the decoded, redacted JSON body; nil in the BASIC view.
	Body any `json:"body,omitempty"`
}

// Attempt is a task's last attempt.
type Attempt struct {
	ScheduleTime time.Time `json:"schedule_time,omitzero"`
	DispatchTime time.Time `json:"dispatch_time,omitzero"`
	ResponseTime time.Time `json:"response_time,omitzero"`
	// Status is the answer, e.g. "OK" or "503 Service Unavailable"; empty while in flight.
	Status string `json:"response_status,omitempty"`
}

// TaskFrom shows a task: credentials masked, the body (read in full only) redacted, with h
// making the refs of phone numbers and wamids (Redacted when h is nil).
func TaskFrom(h *logging.Hasher, t taskqueue.TaskInfo) Task {
	out := Task{
		Name:          t.Name,
		CreateTime:    t.CreateTime,
		ScheduleTime:  t.ScheduleTime,
		DispatchCount: t.DispatchCount,
		ResponseCount: t.ResponseCount,
		FirstAttempt:  t.FirstAttempt,
		Method:        t.Method,
		URL:           t.URL,
		// OIDCServiceAccount is an account, not a credential.
		OIDCServiceAccount: t.OIDCServiceAccount,
	}
	if i := strings.LastIndex(out.Name, "/tasks/"); i >= 0 {
		out.ID, out.Queue = out.Name[i+len("/tasks/"):], tasks.QueueID(out.Name[:i])
	}
	if t.DispatchDeadline != nil {
		out.DispatchDeadline = t.DispatchDeadline.String()
	}
	if la := t.LastAttempt; la != nil {
		out.LastAttempt = &Attempt{ScheduleTime: la.ScheduleTime, DispatchTime: la.DispatchTime, ResponseTime: la.ResponseTime, Status: la.Status}
	}
	if len(t.Headers) > 0 {
		out.Headers = make(map[string]string, len(t.Headers))
		for k, v := range t.Headers {
			if maskedHeaders[strings.ToLower(k)] && v != "" {
				v = Masked
			}
			out.Headers[k] = v
		}
	}
	if len(t.Body) > 0 {
		out.Body = RedactJSON(h, t.Body)
	}
	return out
}

// ListTasks lists up to limit tasks of a queue (id or full name; all of them when limit <= 0),
// without bodies.
func ListTasks(ctx context.Context, q *taskqueue.Admin, queue string, limit int) ([]Task, error) {
	ts, err := q.ListTasks(ctx, queue, limit)
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, t := range ts {
		out = append(out, TaskFrom(nil, t)) // no bodies in a list
	}
	return out, nil
}

// GetTask reads one task with its body, redacted with h.
func GetTask(ctx context.Context, h *logging.Hasher, q *taskqueue.Admin, name string) (Task, error) {
	t, err := q.GetTask(ctx, name, true)
	if err != nil {
		return Task{}, err
	}
	return TaskFrom(h, t), nil
}

// WriteTaskTable writes tasks as a table, like `gcloud tasks list`.
func WriteTaskTable(w io.Writer, ts []Task) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK_NAME\tSCHEDULE_TIME\tDISPATCH_ATTEMPTS\tRESPONSE_ATTEMPTS\tLAST_ATTEMPT_STATUS")
	for _, t := range ts {
		last := "Unknown"
		if t.LastAttempt != nil && t.LastAttempt.Status != "" {
			last = t.LastAttempt.Status
		} else if t.LastAttempt != nil {
			last = "In flight"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", t.ID, stamp(t.ScheduleTime), t.DispatchCount, t.ResponseCount, last)
	}
	return tw.Flush()
}

// WriteTask writes one task in full, like `gcloud tasks describe`.
func WriteTask(w io.Writer, t Task) error {
	var b strings.Builder
	line := func(indent int, k string, v any) {
		fmt.Fprintf(&b, "%s%s: %v\n", strings.Repeat("  ", indent), k, v)
	}
	line(0, "name", t.Name)
	line(0, "createTime", stamp(t.CreateTime))
	line(0, "scheduleTime", stamp(t.ScheduleTime))
	line(0, "dispatchCount", t.DispatchCount)
	line(0, "responseCount", t.ResponseCount)
	if t.DispatchDeadline != "" {
		line(0, "dispatchDeadline", t.DispatchDeadline)
	}
	if !t.FirstAttempt.IsZero() {
		b.WriteString("firstAttempt:\n")
		line(1, "dispatchTime", stamp(t.FirstAttempt))
	}
	if a := t.LastAttempt; a != nil {
		b.WriteString("lastAttempt:\n")
		line(1, "scheduleTime", stamp(a.ScheduleTime))
		line(1, "dispatchTime", stamp(a.DispatchTime))
		if !a.ResponseTime.IsZero() {
			line(1, "responseTime", stamp(a.ResponseTime))
			line(1, "responseStatus", a.Status)
		}
	}
	b.WriteString("httpRequest:\n")
	line(1, "httpMethod", t.Method)
	line(1, "url", t.URL)
	if len(t.Headers) > 0 {
		b.WriteString("  headers:\n")
		keys := make([]string, 0, len(t.Headers))
		for k := range t.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			line(2, k, t.Headers[k])
		}
	}
	if t.OIDCServiceAccount != "" {
		b.WriteString("  oidcToken:\n")
		line(2, "serviceAccountEmail", t.OIDCServiceAccount)
	}
	if t.Body != nil {
		body, err := indentJSON(t.Body, "    ")
		if err != nil {
			return err
		}
		b.WriteString("  body: |  # JSON; message text, names and places redacted, phone numbers hashed\n    ")
		b.WriteString(body)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
