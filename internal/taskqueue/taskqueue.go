package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/wapipe/wapipe/tasks"
)

// Config says where tasks go and how they authenticate to the worker.
type Config struct {
	ProjectID string
	Location  string
	// EmulatorHost is CLOUD_TASKS_EMULATOR_HOST: gRPC without TLS or credentials.
	EmulatorHost string
	// BaseURL is the worker's base URL; task targets are BaseURL + path.
	BaseURL string
	// Token is sent as X-Internal-Token on every task.
	Token string
	// ServiceAccountEmail, when set, makes Cloud Tasks attach an OIDC token for this account,
	// with the worker's base URL as audience.
	ServiceAccountEmail string
}

// Client creates tasks. It is safe for concurrent use.
type Client struct {
	paths
	tc  *cloudtasks.Client
	cfg Config
}

// New connects to Cloud Tasks, or to the emulator when cfg.EmulatorHost is set.
func New(ctx context.Context, cfg Config) (*Client, error) {
	tc, err := cloudtasks.NewClient(ctx, clientOptions(cfg.EmulatorHost)...)
	if err != nil {
		return nil, fmt.Errorf("cloudtasks.NewClient: %w", err)
	}
	return &Client{paths: paths{projectID: cfg.ProjectID, location: cfg.Location}, tc: tc, cfg: cfg}, nil
}

// clientOptions point a Cloud Tasks client (v2 or v2beta3) at emulatorHost: gRPC without TLS or
// credentials. None when emulatorHost is empty.
func clientOptions(emulatorHost string) []option.ClientOption {
	if emulatorHost == "" {
		return nil
	}
	return []option.ClientOption{
		option.WithEndpoint(emulatorHost),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// Close releases the connection.
func (c *Client) Close() error { return c.tc.Close() }

// Task is one task to create.
type Task struct {
	// Queue is the queue id or full name.
	Queue string
	// ID is the task id (the last part of its name); deterministic ids make creation idempotent.
	ID string
	// Path is the worker route, e.g. tasks.ProcessInboundPath.
	Path string
	// Body is the JSON body.
	Body []byte
	// CorrelationID travels as X-Correlation-ID.
	CorrelationID string
	// ScheduleTime delays the first attempt; zero means now.
	ScheduleTime time.Time
	// Invoker, when set, is the service account whose OIDC token the task carries instead of
	// the client's own (Config.ServiceAccountEmail): a replay acts as the route's own enqueuer,
	// the one the worker admits on that route. Without a client account it is ignored (no
	// OIDC at all, as locally).
	Invoker string
}

var errEmptyID = errors.New("task id is empty")

// Result says what Enqueue did.
type Result struct {
	// Name is the task's full resource name.
	Name string
	// Existed is true when a task of that name already existed (or had run within the name
	// reservation window), so nothing new was created.
	Existed bool
}

// Enqueue creates the task. A task of the same name that already exists counts as success, as the
// name makes creation idempotent.
func (c *Client) Enqueue(ctx context.Context, t Task) (Result, error) {
	if t.ID == "" {
		return Result{}, errEmptyID
	}
	queue := c.QueuePath(t.Queue)
	name := queue + "/tasks/" + t.ID
	headers := map[string]string{
		"Content-Type":            "application/json",
		tasks.HeaderInternalToken: c.cfg.Token,
		tasks.HeaderCorrelationID: t.CorrelationID,
	}
	// traceparent (and tracestate) make webhook → worker → Graph one trace.
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(headers))

	req := &cloudtaskspb.HttpRequest{
		Url:        strings.TrimRight(c.cfg.BaseURL, "/") + t.Path,
		HttpMethod: cloudtaskspb.HttpMethod_POST,
		Headers:    headers,
		Body:       t.Body,
	}
	if c.cfg.ServiceAccountEmail != "" {
		invoker := c.cfg.ServiceAccountEmail
		if t.Invoker != "" {
			invoker = t.Invoker
		}
		req.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{
			ServiceAccountEmail: invoker,
			Audience:            Audience(c.cfg.BaseURL),
		}}
	}
	task := &cloudtaskspb.Task{
		Name:        name,
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: req},
	}
	if !t.ScheduleTime.IsZero() {
		task.ScheduleTime = timestamppb.New(t.ScheduleTime)
	}
	_, err := c.tc.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: task})
	switch {
	case err == nil:
		return Result{Name: name}, nil
	case status.Code(err) == codes.AlreadyExists:
		return Result{Name: name, Existed: true}, nil
	default:
		return Result{Name: name}, fmt.Errorf("create task %s: %w", t.ID, err)
	}
}

// Audience is the OIDC audience of wapipe's tasks: the worker's base URL, which is what a Cloud
// Run service expects and what the worker checks.
func Audience(baseURL string) string { return strings.TrimRight(baseURL, "/") }
