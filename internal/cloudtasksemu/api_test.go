package cloudtasksemu

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wapipe/wapipe/tasks"
)

func TestQueuesFromFile(t *testing.T) {
	t.Parallel()
	emu, err := Start(context.Background(), Options{Project: "wapipe-local", Location: "us-central1", Queues: tasks.DefaultQueues()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(emu.Stop)
	c := client(t, emu)
	ctx := context.Background()

	got, err := c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: "projects/wapipe-local/locations/us-central1/queues/wa-outbound"})
	if err != nil {
		t.Fatalf("GetQueue: %v", err)
	}
	want := &cloudtaskspb.Queue{
		Name:       "projects/wapipe-local/locations/us-central1/queues/wa-outbound",
		RateLimits: &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 10, MaxBurstSize: 10, MaxConcurrentDispatches: 20},
		RetryConfig: &cloudtaskspb.RetryConfig{
			MaxAttempts: 15, MinBackoff: dur(5 * time.Second), MaxBackoff: dur(600 * time.Second), MaxDoublings: 5,
		},
		State:                    cloudtaskspb.Queue_RUNNING,
		StackdriverLoggingConfig: &cloudtaskspb.StackdriverLoggingConfig{SamplingRatio: 1},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("wa-outbound (-want, +got):\n%s", diff)
	}

	it := c.ListQueues(ctx, &cloudtaskspb.ListQueuesRequest{Parent: "projects/wapipe-local/locations/us-central1"})
	var names []string
	for {
		q, err := it.Next()
		if err != nil {
			break
		}
		names = append(names, q.GetName())
	}
	wantNames := []string{
		"projects/wapipe-local/locations/us-central1/queues/wa-inbound",
		"projects/wapipe-local/locations/us-central1/queues/wa-outbound",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("ListQueues (-want, +got):\n%s", diff)
	}
}

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	p := parent()

	created, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: p, Queue: &cloudtaskspb.Queue{Name: p + "/queues/q1"}})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	// A queue created without limits gets Cloud Tasks' defaults, as gcloud describes them.
	want := &cloudtaskspb.Queue{
		Name:        p + "/queues/q1",
		RateLimits:  &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 500, MaxBurstSize: 100, MaxConcurrentDispatches: 1000},
		RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 100, MinBackoff: dur(100 * time.Millisecond), MaxBackoff: dur(time.Hour), MaxDoublings: 16},
		State:       cloudtaskspb.Queue_RUNNING,
	}
	if diff := cmp.Diff(want, created, protocmp.Transform()); diff != "" {
		t.Errorf("CreateQueue (-want, +got):\n%s", diff)
	}

	// Only the masked field changes; the burst follows the rate.
	updated, err := c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue: &cloudtaskspb.Queue{
			Name:        p + "/queues/q1",
			RateLimits:  &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 20, MaxConcurrentDispatches: 7},
			RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 3},
		},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits.max_dispatches_per_second", "retry_config.max_attempts"}},
	})
	if err != nil {
		t.Fatalf("UpdateQueue: %v", err)
	}
	want.RateLimits = &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 20, MaxBurstSize: 20, MaxConcurrentDispatches: 1000}
	want.RetryConfig.MaxAttempts = 3
	if diff := cmp.Diff(want, updated, protocmp.Transform()); diff != "" {
		t.Errorf("UpdateQueue (-want, +got):\n%s", diff)
	}

	paused, err := c.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: p + "/queues/q1"})
	if err != nil || paused.GetState() != cloudtaskspb.Queue_PAUSED {
		t.Fatalf("PauseQueue = %v, %v; want PAUSED", paused.GetState(), err)
	}
	resumed, err := c.ResumeQueue(ctx, &cloudtaskspb.ResumeQueueRequest{Name: p + "/queues/q1"})
	if err != nil || resumed.GetState() != cloudtaskspb.Queue_RUNNING {
		t.Fatalf("ResumeQueue = %v, %v; want RUNNING", resumed.GetState(), err)
	}

	// UpdateQueue creates a queue that does not exist.
	if _, err := c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: p + "/queues/q2"}}); err != nil {
		t.Fatalf("UpdateQueue (create): %v", err)
	}
	if _, err := c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: p + "/queues/q2"}); err != nil {
		t.Fatalf("GetQueue q2: %v", err)
	}

	if err := c.DeleteQueue(ctx, &cloudtaskspb.DeleteQueueRequest{Name: p + "/queues/q1"}); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	if _, err := c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: p + "/queues/q1"}); status.Code(err) != codes.NotFound {
		t.Errorf("GetQueue after delete: %v, want NotFound", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	p := parent()
	q := mkQueue(t, c, p, "q", nil, nil)
	mkTask(t, c, q, httpTask(q, "taken", "http://127.0.0.1:1/x"))
	mkQueue(t, c, p, "gone", nil, nil)
	if err := c.DeleteQueue(ctx, &cloudtaskspb.DeleteQueueRequest{Name: p + "/queues/gone"}); err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	queue := func(name string) *cloudtaskspb.CreateQueueRequest {
		return &cloudtaskspb.CreateQueueRequest{Parent: p, Queue: &cloudtaskspb.Queue{Name: name}}
	}

	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"queue already exists", func() error { _, err := c.CreateQueue(ctx, queue(q)); return err }, codes.AlreadyExists},
		{"queue id with underscore", func() error { _, err := c.CreateQueue(ctx, queue(p+"/queues/bad_id")); return err }, codes.InvalidArgument},
		{"queue id too long", func() error {
			_, err := c.CreateQueue(ctx, queue(p+"/queues/"+string(make([]byte, 101))))
			return err
		}, codes.InvalidArgument},
		{"queue recreated too soon", func() error { _, err := c.CreateQueue(ctx, queue(p+"/queues/gone")); return err }, codes.FailedPrecondition},
		{"rate above 500", func() error {
			_, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: p, Queue: &cloudtaskspb.Queue{
				Name: p + "/queues/fast", RateLimits: &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 501}}})
			return err
		}, codes.InvalidArgument},
		{"min backoff above max", func() error {
			_, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: p, Queue: &cloudtaskspb.Queue{
				Name: p + "/queues/back", RetryConfig: &cloudtaskspb.RetryConfig{MinBackoff: dur(time.Minute), MaxBackoff: dur(time.Second)}}})
			return err
		}, codes.InvalidArgument},
		{"unknown update mask path", func() error {
			_, err := c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: q},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits.nope"}}})
			return err
		}, codes.InvalidArgument},
		{"get missing queue", func() error {
			_, err := c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: p + "/queues/none"})
			return err
		}, codes.NotFound},
		{"delete missing queue", func() error { return c.DeleteQueue(ctx, &cloudtaskspb.DeleteQueueRequest{Name: p + "/queues/none"}) }, codes.NotFound},
		{"purge missing queue", func() error {
			_, err := c.PurgeQueue(ctx, &cloudtaskspb.PurgeQueueRequest{Name: p + "/queues/none"})
			return err
		}, codes.NotFound},
		{"task in missing queue", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: p + "/queues/none", Task: httpTask(p+"/queues/none", "", "http://x")})
			return err
		}, codes.NotFound},
		{"task id with spaces", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "not a valid id", "http://x")})
			return err
		}, codes.InvalidArgument},
		{"task id too long", func() error {
			long := make([]byte, 501)
			for i := range long {
				long[i] = 'a'
			}
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, string(long), "http://x")})
			return err
		}, codes.InvalidArgument},
		{"task named under another queue", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q+"-other", "t", "http://x")})
			return err
		}, codes.InvalidArgument},
		{"task already exists", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "taken", "http://x")})
			return err
		}, codes.AlreadyExists},
		{"task without url", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "", "")})
			return err
		}, codes.InvalidArgument},
		{"task url without http scheme", func() error {
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: httpTask(q, "", "ftp://x")})
			return err
		}, codes.InvalidArgument},
		{"body on GET", func() error {
			tk := httpTask(q, "", "http://x")
			tk.GetHttpRequest().HttpMethod = cloudtaskspb.HttpMethod_GET
			tk.GetHttpRequest().Body = []byte("x")
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: tk})
			return err
		}, codes.InvalidArgument},
		{"dispatch deadline above 30 minutes", func() error {
			tk := httpTask(q, "", "http://x")
			tk.DispatchDeadline = dur(31 * time.Minute)
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: tk})
			return err
		}, codes.InvalidArgument},
		{"task over 1 MB", func() error {
			tk := httpTask(q, "", "http://x")
			tk.GetHttpRequest().Body = make([]byte, 1<<20)
			_, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q, Task: tk})
			return err
		}, codes.InvalidArgument},
		{"get missing task", func() error {
			_, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/none"})
			return err
		}, codes.NotFound},
		{"delete missing task", func() error { return c.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: q + "/tasks/none"}) }, codes.NotFound},
		{"run missing task", func() error {
			_, err := c.RunTask(ctx, &cloudtaskspb.RunTaskRequest{Name: q + "/tasks/none"})
			return err
		}, codes.NotFound},
		{"malformed task name", func() error { _, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: "tasks/none"}); return err }, codes.InvalidArgument},
		{"IAM is not emulated", func() error { _, err := c.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: q}); return err }, codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(tt.call()); got != tt.want {
				t.Errorf("code = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTaskViews(t *testing.T) {
	t.Parallel()
	c := client(t, shared(t))
	ctx := context.Background()
	q := mkQueue(t, c, parent(), "q", nil, nil)
	future := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	tk := httpTask(q, "later", "http://127.0.0.1:1/x")
	tk.ScheduleTime = timestamppb.New(future)
	tk.GetHttpRequest().Body = []byte(`{"a":1}`)
	tk.GetHttpRequest().Headers = map[string]string{"Content-Type": "application/json"}
	created := mkTask(t, c, q, tk)
	if created.GetView() != cloudtaskspb.Task_BASIC || created.GetHttpRequest().GetBody() != nil {
		t.Errorf("CreateTask answered view %v with body %q; want BASIC without body", created.GetView(), created.GetHttpRequest().GetBody())
	}

	basic, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/later"})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	full, err := c.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: q + "/tasks/later", ResponseView: cloudtaskspb.Task_FULL})
	if err != nil {
		t.Fatalf("GetTask FULL: %v", err)
	}
	want := &cloudtaskspb.Task{
		Name: q + "/tasks/later",
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url: "http://127.0.0.1:1/x", HttpMethod: cloudtaskspb.HttpMethod_POST,
			Headers: map[string]string{"Content-Type": "application/json"},
		}},
		ScheduleTime:     timestamppb.New(future),
		DispatchDeadline: dur(10 * time.Minute),
		View:             cloudtaskspb.Task_BASIC,
	}
	ignoreCreate := protocmp.IgnoreFields(&cloudtaskspb.Task{}, "create_time")
	if diff := cmp.Diff(want, basic, protocmp.Transform(), ignoreCreate); diff != "" {
		t.Errorf("BASIC (-want, +got):\n%s", diff)
	}
	want.GetHttpRequest().Body = []byte(`{"a":1}`)
	want.View = cloudtaskspb.Task_FULL
	if diff := cmp.Diff(want, full, protocmp.Transform(), ignoreCreate); diff != "" {
		t.Errorf("FULL (-want, +got):\n%s", diff)
	}
	if ct := basic.GetCreateTime().AsTime(); time.Since(ct) > time.Minute || ct.Nanosecond() != 0 {
		t.Errorf("create_time = %v, want now truncated to the second", ct)
	}

	// Unnamed tasks get a generated id, and ListTasks pages through all of them.
	for range 5 {
		mkTask(t, c, q, &cloudtaskspb.Task{ScheduleTime: timestamppb.New(future),
			MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{Url: "http://127.0.0.1:1/x"}}})
	}
	it := c.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: q, PageSize: 2})
	seen := map[string]bool{}
	for {
		task, err := it.Next()
		if err != nil {
			break
		}
		seen[task.GetName()] = true
	}
	if len(seen) != 6 {
		t.Errorf("ListTasks returned %d distinct tasks, want 6", len(seen))
	}
}
