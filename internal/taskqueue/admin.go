package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	cloudtasksbeta "cloud.google.com/go/cloudtasks/apiv2beta3"
	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wapipe/wapipe/tasks"
)

// Admin reads and manages queues and their tasks: what the operator CLI and the health report
// need, and where per-tenant queues will be created. It is safe for concurrent use.
type Admin struct {
	paths
	v2 *cloudtasks.Client
	// beta serves queue stats, which only the v2beta3 API has.
	beta *cloudtasksbeta.Client
}

// NewAdmin connects to Cloud Tasks in projectID/location, or to the emulator at emulatorHost when
// it is not empty. Close it when done.
func NewAdmin(ctx context.Context, projectID, location, emulatorHost string) (*Admin, error) {
	v2, err := cloudtasks.NewClient(ctx, clientOptions(emulatorHost)...)
	if err != nil {
		return nil, fmt.Errorf("cloudtasks.NewClient: %w", err)
	}
	beta, err := cloudtasksbeta.NewClient(ctx, clientOptions(emulatorHost)...)
	if err != nil {
		v2.Close()
		return nil, fmt.Errorf("cloudtasks v2beta3 NewClient: %w", err)
	}
	return &Admin{paths: paths{projectID: projectID, location: location}, v2: v2, beta: beta}, nil
}

// Close releases the connections.
func (a *Admin) Close() error {
	return errors.Join(a.beta.Close(), a.v2.Close())
}

// QueueStats is a queue's backlog as Cloud Tasks reports it.
type QueueStats struct {
	Paused             bool
	Tasks              int64
	ExecutedLastMinute int64
	InFlight           int64
	// OldestArrival is the estimated arrival time of the oldest task; zero when there is none.
	OldestArrival time.Time
}

// QueueStats reads a queue's state and stats (queue id or full name).
func (a *Admin) QueueStats(ctx context.Context, queue string) (QueueStats, error) {
	name := a.QueuePath(queue)
	q, err := a.beta.GetQueue(ctx, &betapb.GetQueueRequest{Name: name, ReadMask: &fieldmaskpb.FieldMask{Paths: []string{"name", "state", "stats"}}})
	if err != nil {
		return QueueStats{}, fmt.Errorf("queue stats %s: %w", name, err)
	}
	st := QueueStats{Paused: q.GetState() == betapb.Queue_PAUSED}
	if s := q.GetStats(); s != nil {
		st.Tasks, st.ExecutedLastMinute, st.InFlight = s.TasksCount, s.ExecutedLastMinuteCount, s.ConcurrentDispatchesCount
		if t := s.GetOldestEstimatedArrivalTime(); t != nil {
			st.OldestArrival = t.AsTime()
		}
	}
	return st, nil
}

// PauseQueue stops a queue from dispatching; its tasks wait.
func (a *Admin) PauseQueue(ctx context.Context, queue string) error {
	if _, err := a.v2.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: a.QueuePath(queue)}); err != nil {
		return fmt.Errorf("pause queue %s: %w", queue, err)
	}
	return nil
}

// ResumeQueue makes a paused queue dispatch again.
func (a *Admin) ResumeQueue(ctx context.Context, queue string) error {
	if _, err := a.v2.ResumeQueue(ctx, &cloudtaskspb.ResumeQueueRequest{Name: a.QueuePath(queue)}); err != nil {
		return fmt.Errorf("resume queue %s: %w", queue, err)
	}
	return nil
}

// CreateQueue creates the queue q defines (its id, rate limits and retry policy).
func (a *Admin) CreateQueue(ctx context.Context, q tasks.Queue) error {
	_, err := a.v2.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{
		Parent: fmt.Sprintf("projects/%s/locations/%s", a.projectID, a.location),
		Queue:  a.queueProto(q),
	})
	if err != nil {
		return fmt.Errorf("create queue %s: %w", q.ID, err)
	}
	return nil
}

// UpdateQueue sets an existing queue's rate limits and retry policy to q's.
func (a *Admin) UpdateQueue(ctx context.Context, q tasks.Queue) error {
	_, err := a.v2.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue:      a.queueProto(q),
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits", "retry_config", "stackdriver_logging_config"}},
	})
	if err != nil {
		return fmt.Errorf("update queue %s: %w", q.ID, err)
	}
	return nil
}

func (a *Admin) queueProto(q tasks.Queue) *cloudtaskspb.Queue {
	rc := q.RetryConfig
	pb := &cloudtaskspb.Queue{
		Name: a.QueuePath(q.ID),
		RateLimits: &cloudtaskspb.RateLimits{
			MaxDispatchesPerSecond:  q.RateLimits.MaxDispatchesPerSecond,
			MaxConcurrentDispatches: q.RateLimits.MaxConcurrentDispatches,
		},
		RetryConfig: &cloudtaskspb.RetryConfig{
			MaxAttempts:  rc.MaxAttempts,
			MinBackoff:   durationpb.New(rc.MinBackoff.Duration),
			MaxBackoff:   durationpb.New(rc.MaxBackoff.Duration),
			MaxDoublings: rc.MaxDoublings,
		},
		StackdriverLoggingConfig: &cloudtaskspb.StackdriverLoggingConfig{SamplingRatio: q.StackdriverLogging.SamplingRatio},
	}
	if rc.MaxRetryDuration.Duration > 0 {
		pb.RetryConfig.MaxRetryDuration = durationpb.New(rc.MaxRetryDuration.Duration)
	}
	return pb
}

// TaskInfo is a task as Cloud Tasks describes it. Headers and body are as stored: whoever shows
// them masks credentials and redacts personal data.
type TaskInfo struct {
	Name          string
	CreateTime    time.Time
	ScheduleTime  time.Time
	DispatchCount int32
	ResponseCount int32
	FirstAttempt  time.Time
	LastAttempt   *Attempt
	// DispatchDeadline is nil when the task sets none.
	DispatchDeadline *time.Duration
	Method           string
	URL              string
	Headers          map[string]string
	// OIDCServiceAccount is the account Cloud Tasks signs an OIDC token for, if any.
	OIDCServiceAccount string
	// Body is nil unless the task was read in full.
	Body []byte
}

// Attempt is a task's last attempt.
type Attempt struct {
	ScheduleTime time.Time
	DispatchTime time.Time
	ResponseTime time.Time
	// Status is the answer, e.g. "OK" or "503 Service Unavailable"; empty while in flight.
	Status string
}

// ErrTaskNotFound is what GetTask's error matches (errors.Is) when the task is not in its queue.
var ErrTaskNotFound = errors.New("task not found")

// TaskNotFoundError says a task is not in its queue, with Cloud Tasks' explanation (a task that
// ran recently is reported as such).
type TaskNotFoundError struct{ Message string }

func (e *TaskNotFoundError) Error() string { return "task not found: " + e.Message }

// Is makes errors.Is(err, ErrTaskNotFound) true.
func (e *TaskNotFoundError) Is(target error) bool { return target == ErrTaskNotFound }

// ListTasks lists up to limit tasks of a queue (all of them when limit <= 0), without bodies.
func (a *Admin) ListTasks(ctx context.Context, queue string, limit int) ([]TaskInfo, error) {
	queuePath := a.QueuePath(queue)
	it := a.v2.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: queuePath})
	var out []TaskInfo
	for limit <= 0 || len(out) < limit {
		t, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list tasks of %s: %w", queuePath, err)
		}
		out = append(out, TaskInfoFrom(t))
	}
	return out, nil
}

// GetTask reads one task by its full name, with its body when full is true. A task not in its
// queue is a *TaskNotFoundError.
func (a *Admin) GetTask(ctx context.Context, name string, full bool) (TaskInfo, error) {
	req := &cloudtaskspb.GetTaskRequest{Name: name}
	if full {
		req.ResponseView = cloudtaskspb.Task_FULL
	}
	t, err := a.v2.GetTask(ctx, req)
	if status.Code(err) == codes.NotFound {
		return TaskInfo{}, &TaskNotFoundError{Message: status.Convert(err).Message()}
	}
	if err != nil {
		return TaskInfo{}, fmt.Errorf("get task %s: %w", name, err)
	}
	return TaskInfoFrom(t), nil
}

// TaskInfoFrom converts the API's task (tests build one to check what is shown of it).
func TaskInfoFrom(t *cloudtaskspb.Task) TaskInfo {
	out := TaskInfo{
		Name:          t.GetName(),
		CreateTime:    ts(t.GetCreateTime()),
		ScheduleTime:  ts(t.GetScheduleTime()),
		DispatchCount: t.GetDispatchCount(),
		ResponseCount: t.GetResponseCount(),
		FirstAttempt:  ts(t.GetFirstAttempt().GetDispatchTime()),
	}
	if d := t.GetDispatchDeadline(); d != nil {
		dd := d.AsDuration()
		out.DispatchDeadline = &dd
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
				out.Headers[k] = v
			}
		}
		out.OIDCServiceAccount = hr.GetOidcToken().GetServiceAccountEmail()
		if t.GetView() == cloudtaskspb.Task_FULL && len(hr.GetBody()) > 0 {
			out.Body = hr.GetBody()
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

// paths names queues and tasks in one project and location.
type paths struct{ projectID, location string }

// QueuePath returns the full resource name of a queue given its id or its full name.
func (p paths) QueuePath(queue string) string {
	if strings.HasPrefix(queue, "projects/") {
		return queue
	}
	return fmt.Sprintf("projects/%s/locations/%s/queues/%s", p.projectID, p.location, queue)
}

// TaskPath returns the full name of a task given its id (or its full name) and its queue.
func (p paths) TaskPath(queue, task string) string {
	if strings.HasPrefix(task, "projects/") {
		return task
	}
	return p.QueuePath(queue) + "/tasks/" + task
}
