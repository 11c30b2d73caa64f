package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

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

// TaskFrom converts the API's task.
func TaskFrom(t *cloudtaskspb.Task) Task {
	out := Task{
		Name:          t.GetName(),
		CreateTime:    ts(t.GetCreateTime()),
		ScheduleTime:  ts(t.GetScheduleTime()),
		DispatchCount: t.GetDispatchCount(),
		ResponseCount: t.GetResponseCount(),
		FirstAttempt:  ts(t.GetFirstAttempt().GetDispatchTime()),
	}
	if i := strings.LastIndex(out.Name, "/tasks/"); i >= 0 {
		out.ID, out.Queue = out.Name[i+len("/tasks/"):], tasks.QueueID(out.Name[:i])
	}
	if d := t.GetDispatchDeadline(); d != nil {
		out.DispatchDeadline = d.AsDuration().String()
	}
	if la := t.GetLastAttempt(); la != nil {
		a := &Attempt{ScheduleTime: ts(la.GetScheduleTime()), DispatchTime: ts(la.GetDispatchTime()), ResponseTime: ts(la.GetResponseTime())}
		if rs := la.GetResponseStatus(); rs != nil {
			if codes.Code(rs.GetCode()) == codes.OK {
				a.Status = "OK"
			} else if a.Status = rs.GetMessage(); a.Status == "" {
				a.Status = codes.Code(rs.GetCode()).String()
			}
		}
		out.LastAttempt = a
	}
	if hr := t.GetHttpRequest(); hr != nil {
		out.Method, out.URL = methodName(hr.GetHttpMethod()), hr.GetUrl()
		if len(hr.GetHeaders()) > 0 {
			out.Headers = make(map[string]string, len(hr.GetHeaders()))
			for k, v := range hr.GetHeaders() {
				if maskedHeaders[strings.ToLower(k)] && v != "" {
					v = Masked
				}
				out.Headers[k] = v
			}
		}
		out.OIDCServiceAccount = hr.GetOidcToken().GetServiceAccountEmail()
		if t.GetView() == cloudtaskspb.Task_FULL && len(hr.GetBody()) > 0 {
			out.Body = RedactJSON(hr.GetBody())
		}
	}
	return out
}

func ts(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}

func methodName(m cloudtaskspb.HttpMethod) string {
	switch m {
	case cloudtaskspb.HttpMethod_POST:
		return http.MethodPost
	case cloudtaskspb.HttpMethod_GET:
		return http.MethodGet
	case cloudtaskspb.HttpMethod_PUT:
		return http.MethodPut
	case cloudtaskspb.HttpMethod_DELETE:
		return http.MethodDelete
	case cloudtaskspb.HttpMethod_PATCH:
		return http.MethodPatch
	case cloudtaskspb.HttpMethod_HEAD:
		return http.MethodHead
	case cloudtaskspb.HttpMethod_OPTIONS:
		return http.MethodOptions
	}
	return m.String()
}

// ListTasks lists up to limit tasks of a queue (all of them when limit <= 0), BASIC view.
func ListTasks(ctx context.Context, tc *cloudtasks.Client, queuePath string, limit int) ([]Task, error) {
	it := tc.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: queuePath})
	var out []Task
	for limit <= 0 || len(out) < limit {
		t, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list tasks of %s: %w", queuePath, err)
		}
		out = append(out, TaskFrom(t))
	}
	return out, nil
}

// GetTask reads one task with its body (FULL view).
func GetTask(ctx context.Context, tc *cloudtasks.Client, name string) (Task, error) {
	t, err := tc.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: name, ResponseView: cloudtaskspb.Task_FULL})
	if err != nil {
		return Task{}, fmt.Errorf("get task %s: %w", name, err)
	}
	return TaskFrom(t), nil
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
