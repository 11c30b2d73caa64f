package cloudtasksemu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Limits Cloud Tasks enforces on tasks.
const (
	maxTaskBytes         = 1_000_000 // "1 MB": the stricter reading, so the emulator never accepts what production refuses
	maxDispatchDeadline  = 30 * time.Minute
	defaultDeadline      = 10 * time.Minute
	maxScheduleAhead     = 30 * 24 * time.Hour
	maxTaskPageSize      = 1000
	maxQueuePageSize     = 9800
	defaultQueuePageSize = 9800
	defaultTaskPageSize  = 1000
)

// v2Service implements google.cloud.tasks.v2.CloudTasks. Methods it does not override (IAM, batch
// calls, CMEK) answer Unimplemented through the embedded type.
type v2Service struct {
	cloudtaskspb.UnimplementedCloudTasksServer
	s *Server
}

// ---- queues ----

func (v *v2Service) ListQueues(_ context.Context, req *cloudtaskspb.ListQueuesRequest) (*cloudtaskspb.ListQueuesResponse, error) {
	qs, next, err := v.s.listQueues(req.GetParent(), req.GetFilter(), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	resp := &cloudtaskspb.ListQueuesResponse{NextPageToken: next}
	for _, q := range qs {
		q.mu.Lock()
		resp.Queues = append(resp.Queues, q.proto())
		q.mu.Unlock()
	}
	return resp, nil
}

func (v *v2Service) GetQueue(_ context.Context, req *cloudtaskspb.GetQueueRequest) (*cloudtaskspb.Queue, error) {
	q, err := v.s.queue(req.GetName())
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.proto(), nil
}

func (v *v2Service) CreateQueue(_ context.Context, req *cloudtaskspb.CreateQueueRequest) (*cloudtaskspb.Queue, error) {
	in := req.GetQueue()
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "Queue is required.")
	}
	if _, _, err := parseParent(req.GetParent()); err != nil {
		return nil, err
	}
	parent, _, err := parseQueueName(in.GetName())
	if err != nil {
		return nil, err
	}
	if parent != req.GetParent() {
		return nil, status.Errorf(codes.InvalidArgument,
			"The queue name from request ('%s') must be under the parent ('%s').", in.GetName(), req.GetParent())
	}
	cfg, err := applyQueue(defaultConfig(), in, nil)
	if err != nil {
		return nil, err
	}
	q, err := v.s.createQueue(in.GetName(), cfg)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.proto(), nil
}

func (v *v2Service) UpdateQueue(_ context.Context, req *cloudtaskspb.UpdateQueueRequest) (*cloudtaskspb.Queue, error) {
	in := req.GetQueue()
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "Queue is required.")
	}
	paths := req.GetUpdateMask().GetPaths()
	q, err := v.s.queue(in.GetName())
	if status.Code(err) == codes.NotFound {
		// UpdateQueue creates the queue when it does not exist.
		cfg, err := applyQueue(defaultConfig(), in, paths)
		if err != nil {
			return nil, err
		}
		if q, err = v.s.createQueue(in.GetName(), cfg); err != nil {
			return nil, err
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.proto(), nil
	}
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	cfg, err := applyQueue(q.cfg, in, paths)
	if err != nil {
		return nil, err
	}
	q.refill(time.Now().UnixNano())
	q.cfg = cfg
	if b := float64(cfg.burst); q.tokens > b {
		q.tokens = b
	}
	q.poke()
	return q.proto(), nil
}

func (v *v2Service) DeleteQueue(_ context.Context, req *cloudtaskspb.DeleteQueueRequest) (*emptypb.Empty, error) {
	if err := v.s.deleteQueue(req.GetName()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (v *v2Service) PurgeQueue(_ context.Context, req *cloudtaskspb.PurgeQueueRequest) (*cloudtaskspb.Queue, error) {
	q, err := v.s.queue(req.GetName())
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now().UnixNano()
	for _, t := range q.tasks {
		q.reserve(t, now, v.s.opts.NameReservation)
		t.heapIdx = -1
	}
	clear(q.tasks)
	clear(q.waiting)
	q.waiting = q.waiting[:0]
	q.purgeTime = now
	return q.proto(), nil
}

func (v *v2Service) PauseQueue(_ context.Context, req *cloudtaskspb.PauseQueueRequest) (*cloudtaskspb.Queue, error) {
	return v.setPaused(req.GetName(), true)
}

func (v *v2Service) ResumeQueue(_ context.Context, req *cloudtaskspb.ResumeQueueRequest) (*cloudtaskspb.Queue, error) {
	return v.setPaused(req.GetName(), false)
}

func (v *v2Service) setPaused(name string, paused bool) (*cloudtaskspb.Queue, error) {
	q, err := v.s.queue(name)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paused = paused
	q.poke()
	return q.proto(), nil
}

// listQueues pages through a parent's queues in name order; the page token is the last name
// returned.
func (s *Server) listQueues(parent, filter string, size int32, token string) ([]*queue, string, error) {
	if _, _, err := parseParent(parent); err != nil {
		return nil, "", err
	}
	if filter != "" {
		return nil, "", status.Error(codes.Unimplemented, "the emulator does not support ListQueues filters")
	}
	if size < 0 {
		return nil, "", status.Error(codes.InvalidArgument, "page_size must not be negative.")
	}
	if size == 0 || size > maxQueuePageSize {
		size = defaultQueuePageSize
	}
	qs := s.queuesUnder(parent)
	start := 0
	if token != "" {
		start, _ = slices.BinarySearchFunc(qs, token, func(q *queue, tok string) int { return strings.Compare(q.name, tok) })
		if start < len(qs) && qs[start].name == token {
			start++
		}
	}
	qs = qs[start:]
	next := ""
	if len(qs) > int(size) {
		qs = qs[:size]
		next = qs[len(qs)-1].name
	}
	return qs, next, nil
}

// defaultConfig is a queue created without rate_limits or retry_config.
func defaultConfig() queueConfig {
	return queueConfig{
		rate:          defaultMaxDispatchesPerSecond,
		burst:         maxBurstSize(defaultMaxDispatchesPerSecond),
		maxConcurrent: defaultMaxConcurrentDispatches,
		retry:         defaultRetry,
	}
}

// Queue fields UpdateQueue's mask may name.
var queueFields = []string{
	"name", "state", "purge_time",
	"rate_limits", "rate_limits.max_dispatches_per_second", "rate_limits.max_burst_size", "rate_limits.max_concurrent_dispatches",
	"retry_config", "retry_config.max_attempts", "retry_config.min_backoff", "retry_config.max_backoff",
	"retry_config.max_doublings", "retry_config.max_retry_duration",
	"stackdriver_logging_config", "stackdriver_logging_config.sampling_ratio",
	"http_target", "app_engine_routing_override",
}

// applyQueue returns cfg with in's fields applied: all of them when paths is empty (as
// UpdateQueue documents), else those the mask names. A zero value means Cloud Tasks' default:
// proto3 cannot tell "0" from "unset", and neither can the API.
func applyQueue(cfg queueConfig, in *cloudtaskspb.Queue, paths []string) (queueConfig, error) {
	for _, p := range paths {
		if !slices.Contains(queueFields, p) {
			return cfg, status.Errorf(codes.InvalidArgument, "Invalid update_mask path %q.", p)
		}
	}
	has := func(field string) bool {
		if len(paths) == 0 {
			return true
		}
		parent, _, _ := strings.Cut(field, ".")
		return slices.Contains(paths, field) || slices.Contains(paths, parent)
	}
	if (has("http_target") && in.GetHttpTarget() != nil) ||
		(has("app_engine_routing_override") && in.GetAppEngineRoutingOverride() != nil) {
		return cfg, status.Error(codes.Unimplemented, "the emulator supports neither queue-level http_target nor App Engine routing")
	}
	rl, rc := in.GetRateLimits(), in.GetRetryConfig()
	if has("rate_limits.max_dispatches_per_second") {
		r := rl.GetMaxDispatchesPerSecond()
		switch {
		case r < 0:
			return cfg, status.Error(codes.InvalidArgument, "RateLimits.maxDispatchesPerSecond cannot be negative.")
		case r > maxDispatchesPerSecondLimit:
			return cfg, status.Error(codes.InvalidArgument, "RateLimits.maxDispatchesPerSecond must be less than or equal to 500.")
		case r == 0:
			r = defaultMaxDispatchesPerSecond
		}
		cfg.rate = r
	}
	// max_burst_size is output only: whatever the caller sent, it follows the rate.
	cfg.burst = maxBurstSize(cfg.rate)
	if has("rate_limits.max_concurrent_dispatches") {
		c := rl.GetMaxConcurrentDispatches()
		switch {
		case c < 0:
			return cfg, status.Error(codes.InvalidArgument, "RateLimits.maxConcurrentDispatches cannot be negative.")
		case c > maxConcurrentDispatchesLimit:
			return cfg, status.Error(codes.InvalidArgument, "RateLimits.maxConcurrentDispatches must be less than or equal to 5000.")
		case c == 0:
			c = defaultMaxConcurrentDispatches
		}
		cfg.maxConcurrent = c
	}
	if has("retry_config.max_attempts") {
		a := rc.GetMaxAttempts()
		switch {
		case a < -1:
			return cfg, status.Error(codes.InvalidArgument, "RetryConfig.maxAttempts must be greater or equal to -1.")
		case a == 0:
			a = defaultRetry.maxAttempts
		}
		cfg.retry.maxAttempts = a
	}
	if has("retry_config.max_doublings") {
		d := rc.GetMaxDoublings()
		switch {
		case d < 0:
			return cfg, status.Error(codes.InvalidArgument, "RetryConfig.maxDoublings cannot be negative.")
		case d == 0:
			d = defaultRetry.maxDoublings
		}
		cfg.retry.maxDoublings = d
	}
	durations := []struct {
		field, label string
		in           *durationpb.Duration
		out          *time.Duration
		def          time.Duration
	}{
		{"retry_config.min_backoff", "minBackoff", rc.GetMinBackoff(), &cfg.retry.minBackoff, defaultRetry.minBackoff},
		{"retry_config.max_backoff", "maxBackoff", rc.GetMaxBackoff(), &cfg.retry.maxBackoff, defaultRetry.maxBackoff},
		{"retry_config.max_retry_duration", "maxRetryDuration", rc.GetMaxRetryDuration(), &cfg.retry.maxRetryDuration, 0},
	}
	for _, d := range durations {
		if !has(d.field) {
			continue
		}
		if d.in == nil {
			*d.out = d.def
			continue
		}
		if err := d.in.CheckValid(); err != nil {
			return cfg, status.Errorf(codes.InvalidArgument, "RetryConfig.%s: %v", d.label, err)
		}
		v := d.in.AsDuration()
		switch {
		case v < 0:
			return cfg, status.Errorf(codes.InvalidArgument, "RetryConfig.%s cannot be negative.", d.label)
		case v == 0:
			v = d.def
		}
		*d.out = v
	}
	if cfg.retry.minBackoff > cfg.retry.maxBackoff {
		return cfg, status.Error(codes.InvalidArgument, "RetryConfig.minBackoff must be less than or equal to RetryConfig.maxBackoff.")
	}
	if has("stackdriver_logging_config.sampling_ratio") {
		r := in.GetStackdriverLoggingConfig().GetSamplingRatio()
		if r < 0 || r > 1 {
			return cfg, status.Error(codes.InvalidArgument, "StackdriverLoggingConfig.samplingRatio must be between 0 and 1.")
		}
		cfg.samplingRatio = r
	}
	return cfg, nil
}

// proto renders the queue. Called with mu held.
func (q *queue) proto() *cloudtaskspb.Queue {
	out := &cloudtaskspb.Queue{
		Name: q.name,
		RateLimits: &cloudtaskspb.RateLimits{
			MaxDispatchesPerSecond:  q.cfg.rate,
			MaxBurstSize:            q.cfg.burst,
			MaxConcurrentDispatches: q.cfg.maxConcurrent,
		},
		RetryConfig: retryProto(q.cfg.retry),
		State:       cloudtaskspb.Queue_RUNNING,
	}
	if q.paused {
		out.State = cloudtaskspb.Queue_PAUSED
	}
	if q.purgeTime != 0 {
		out.PurgeTime = timestamppb.New(time.Unix(0, q.purgeTime))
	}
	if q.cfg.samplingRatio > 0 {
		out.StackdriverLoggingConfig = &cloudtaskspb.StackdriverLoggingConfig{SamplingRatio: q.cfg.samplingRatio}
	}
	return out
}

func retryProto(p retryPolicy) *cloudtaskspb.RetryConfig {
	rc := &cloudtaskspb.RetryConfig{
		MaxAttempts:  p.maxAttempts,
		MinBackoff:   durationpb.New(p.minBackoff),
		MaxBackoff:   durationpb.New(p.maxBackoff),
		MaxDoublings: p.maxDoublings,
	}
	if p.maxRetryDuration > 0 {
		rc.MaxRetryDuration = durationpb.New(p.maxRetryDuration)
	}
	return rc
}

// ---- tasks ----

func (v *v2Service) CreateTask(_ context.Context, req *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	s := v.s
	q, err := s.queue(req.GetParent())
	if err != nil {
		return nil, err
	}
	in := req.GetTask()
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "Task is required.")
	}
	t, err := s.newTask(req.GetParent(), in)
	if err != nil {
		return nil, err
	}

	now := time.Now().UnixNano()
	q.mu.Lock()
	if t.id != "" {
		if _, ok := q.tasks[t.id]; ok || q.reserved(t.id, now) {
			q.mu.Unlock()
			return nil, status.Error(codes.AlreadyExists, msgTaskExists)
		}
	} else {
		for t.id == "" || q.tasks[t.id] != nil {
			// Cloud Tasks' generated ids are long decimal numbers.
			t.id = strconv.FormatUint(rand.Uint64()>>1, 10)
		}
	}
	t.url = q.intern(t.url)
	for i := 0; i < len(t.headers); i += 2 {
		t.headers[i] = q.intern(t.headers[i])
	}
	t.created = now
	if t.schedule < now {
		t.schedule = now
	}
	q.tasks[t.id] = t
	q.enqueue(t)
	out := q.taskProto(t, req.GetResponseView())
	q.mu.Unlock()
	q.poke()
	return out, nil
}

// newTask validates a CreateTask request's task as Cloud Tasks does and builds the stored form.
func (s *Server) newTask(queueName string, in *cloudtaskspb.Task) (*task, error) {
	t := &task{heapIdx: -1}
	if in.GetName() != "" {
		qn, id, err := parseTaskName(in.GetName())
		if err != nil {
			return nil, err
		}
		if qn != queueName {
			return nil, status.Errorf(codes.InvalidArgument,
				"The queue name from request ('%s') must be the same as the queue name in the named task ('%s').", queueName, qn)
		}
		t.id, t.named = id, true
	}
	if in.GetAppEngineHttpRequest() != nil {
		return nil, status.Error(codes.Unimplemented, "the emulator does not dispatch App Engine tasks")
	}
	hr := in.GetHttpRequest()
	if hr == nil {
		return nil, status.Error(codes.InvalidArgument, "Task.httpRequest is required.")
	}
	switch u := hr.GetUrl(); {
	case u == "":
		return nil, status.Error(codes.InvalidArgument, "HttpRequest.url is required.")
	case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://"):
		return nil, status.Error(codes.InvalidArgument, "HttpTarget.url must start with 'http://' or 'https://'.")
	}
	t.url = hr.GetUrl()
	t.method = hr.GetHttpMethod()
	if t.method == cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		t.method = cloudtaskspb.HttpMethod_POST
	}
	if methodName(t.method) == "" {
		return nil, status.Errorf(codes.InvalidArgument, "HttpRequest.httpMethod %v is not supported.", t.method)
	}
	if len(hr.GetBody()) > 0 {
		switch t.method {
		case cloudtaskspb.HttpMethod_POST, cloudtaskspb.HttpMethod_PUT, cloudtaskspb.HttpMethod_PATCH:
		default:
			return nil, status.Error(codes.InvalidArgument, "HttpRequest.body is allowed only for POST, PUT and PATCH.")
		}
		t.body = hr.GetBody()
	}
	if len(hr.GetHeaders()) > 0 {
		t.headers = make([]string, 0, 2*len(hr.GetHeaders()))
		for k, val := range hr.GetHeaders() {
			t.headers = append(t.headers, k, val)
		}
	}
	if hr.GetOauthToken() != nil {
		return nil, status.Error(codes.Unimplemented, "the emulator cannot mint Google OAuth tokens; use oidc_token")
	}
	if o := hr.GetOidcToken(); o != nil {
		if o.GetServiceAccountEmail() == "" {
			return nil, status.Error(codes.InvalidArgument, "OidcToken.serviceAccountEmail is required.")
		}
		t.oidc = &cloudtaskspb.OidcToken{ServiceAccountEmail: o.GetServiceAccountEmail(), Audience: o.GetAudience()}
	}
	t.deadline = defaultDeadline
	if d := in.GetDispatchDeadline(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Task.dispatchDeadline: %v", err)
		}
		t.deadline = d.AsDuration().Truncate(time.Millisecond)
		if t.deadline < s.opts.MinDispatchDeadline || t.deadline > maxDispatchDeadline {
			return nil, status.Errorf(codes.InvalidArgument,
				"Task.dispatchDeadline must be in the interval [%v, %v].", s.opts.MinDispatchDeadline, maxDispatchDeadline)
		}
	}
	if st := in.GetScheduleTime(); st != nil {
		if err := st.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Task.scheduleTime: %v", err)
		}
		at := st.AsTime().Truncate(time.Microsecond)
		if time.Until(at) > maxScheduleAhead {
			return nil, status.Error(codes.InvalidArgument, "Task.scheduleTime cannot be more than 30 days in the future.")
		}
		t.schedule = at.UnixNano()
	}
	if rc := in.GetRetryConfig(); rc != nil {
		cfg, err := applyQueue(defaultConfig(), &cloudtaskspb.Queue{RetryConfig: rc}, []string{"retry_config"})
		if err != nil {
			return nil, err
		}
		t.retry = &cfg.retry
	}
	if n := proto.Size(in); n > maxTaskBytes {
		return nil, status.Errorf(codes.InvalidArgument, "Task size %d bytes is larger than the maximum of %d bytes.", n, maxTaskBytes)
	}
	return t, nil
}

func (v *v2Service) GetTask(_ context.Context, req *cloudtaskspb.GetTaskRequest) (*cloudtaskspb.Task, error) {
	q, t, err := v.s.lockTask(req.GetName())
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	return q.taskProto(t, req.GetResponseView()), nil
}

func (v *v2Service) DeleteTask(_ context.Context, req *cloudtaskspb.DeleteTaskRequest) (*emptypb.Empty, error) {
	q, t, err := v.s.lockTask(req.GetName())
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	q.removeTask(t, time.Now().UnixNano(), v.s.opts.NameReservation)
	return &emptypb.Empty{}, nil
}

// RunTask dispatches now, whatever the schedule, the rate limits and the queue's state, as Cloud
// Tasks does; the answer is the task as it stands once the attempt has started.
func (v *v2Service) RunTask(_ context.Context, req *cloudtaskspb.RunTaskRequest) (*cloudtaskspb.Task, error) {
	q, t, err := v.s.lockTask(req.GetName())
	if err != nil {
		return nil, err
	}
	defer q.mu.Unlock()
	if !v.s.startDispatch(q, t, time.Now().UnixNano()) {
		return nil, status.Error(codes.Unavailable, "the emulator is stopping")
	}
	return q.taskProto(t, req.GetResponseView()), nil
}

func (v *v2Service) ListTasks(_ context.Context, req *cloudtaskspb.ListTasksRequest) (*cloudtaskspb.ListTasksResponse, error) {
	q, err := v.s.queue(req.GetParent())
	if err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size < 0 {
		return nil, status.Error(codes.InvalidArgument, "page_size must not be negative.")
	}
	if size == 0 || size > maxTaskPageSize {
		size = defaultTaskPageSize
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// Task ids order the pages, and the page token is the last id returned, so paging stays
	// stable while tasks come and go.
	ids := make([]string, 0, len(q.tasks))
	for id := range q.tasks {
		if id > req.GetPageToken() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	resp := &cloudtaskspb.ListTasksResponse{}
	if len(ids) > size {
		ids = ids[:size]
		resp.NextPageToken = ids[len(ids)-1]
	}
	for _, id := range ids {
		resp.Tasks = append(resp.Tasks, q.taskProto(q.tasks[id], req.GetResponseView()))
	}
	return resp, nil
}

// lockTask finds a task and returns it with its queue locked, or the error Cloud Tasks gives.
func (s *Server) lockTask(name string) (*queue, *task, error) {
	qn, id, err := parseTaskName(name)
	if err != nil {
		return nil, nil, err
	}
	q, err := s.queue(qn)
	if err != nil {
		return nil, nil, err
	}
	q.mu.Lock()
	t, ok := q.tasks[id]
	if !ok {
		recent := q.reserved(id, time.Now().UnixNano())
		q.mu.Unlock()
		if recent {
			return nil, nil, status.Error(codes.NotFound, msgTaskRecentlyGone)
		}
		return nil, nil, status.Error(codes.NotFound, msgNotFound)
	}
	return q, t, nil
}

// taskProto renders a task; the BASIC view (the default) leaves the body out, as Cloud Tasks
// does. Called with the queue's mu held.
func (q *queue) taskProto(t *task, view cloudtaskspb.Task_View) *cloudtaskspb.Task {
	if view != cloudtaskspb.Task_FULL {
		view = cloudtaskspb.Task_BASIC
	}
	hr := &cloudtaskspb.HttpRequest{Url: t.url, HttpMethod: t.method}
	if len(t.headers) > 0 {
		hr.Headers = make(map[string]string, len(t.headers)/2)
		for i := 0; i+1 < len(t.headers); i += 2 {
			hr.Headers[t.headers[i]] = t.headers[i+1]
		}
	}
	if view == cloudtaskspb.Task_FULL {
		hr.Body = t.body
	}
	if t.oidc != nil {
		hr.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: proto.Clone(t.oidc).(*cloudtaskspb.OidcToken)}
	}
	out := &cloudtaskspb.Task{
		Name:             q.name + "/tasks/" + t.id,
		MessageType:      &cloudtaskspb.Task_HttpRequest{HttpRequest: hr},
		ScheduleTime:     timestamppb.New(time.Unix(0, t.schedule)),
		CreateTime:       timestamppb.New(time.Unix(0, t.created).Truncate(time.Second)),
		DispatchDeadline: durationpb.New(t.deadline),
		DispatchCount:    t.dispatchCount,
		ResponseCount:    t.responseCount,
		View:             view,
	}
	if t.retry != nil {
		out.RetryConfig = retryProto(*t.retry)
	}
	if t.dispatchCount > 0 {
		// Cloud Tasks keeps only the dispatch time of the first attempt.
		out.FirstAttempt = &cloudtaskspb.Attempt{DispatchTime: timestamppb.New(time.Unix(0, t.firstDispatch))}
	}
	if a := t.last; a != nil {
		la := &cloudtaskspb.Attempt{
			ScheduleTime: timestamppb.New(time.Unix(0, a.schedule)),
			DispatchTime: timestamppb.New(time.Unix(0, a.dispatch)),
		}
		if a.response != 0 {
			la.ResponseTime = timestamppb.New(time.Unix(0, a.response))
			msg := a.errMsg
			if a.httpStatus != 0 {
				msg = fmt.Sprintf("%d %s", a.httpStatus, http.StatusText(int(a.httpStatus)))
			}
			la.ResponseStatus = status.New(codes.Code(a.code), msg).Proto()
		}
		out.LastAttempt = la
	}
	return out
}

// methodName is the HTTP method of a Cloud Tasks HttpMethod, "" for one it does not define.
func methodName(m cloudtaskspb.HttpMethod) string {
	switch m {
	case cloudtaskspb.HttpMethod_POST:
		return http.MethodPost
	case cloudtaskspb.HttpMethod_GET:
		return http.MethodGet
	case cloudtaskspb.HttpMethod_HEAD:
		return http.MethodHead
	case cloudtaskspb.HttpMethod_PUT:
		return http.MethodPut
	case cloudtaskspb.HttpMethod_DELETE:
		return http.MethodDelete
	case cloudtaskspb.HttpMethod_PATCH:
		return http.MethodPatch
	case cloudtaskspb.HttpMethod_OPTIONS:
		return http.MethodOptions
	}
	return ""
}
