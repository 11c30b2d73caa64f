package cloudtasksemu

import (
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Resource name rules, as the Task.name and Queue.name documentation states them.
var (
	projectIDPattern  = regexp.MustCompile(`^[A-Za-z0-9.:-]{1,100}$`)
	locationIDPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)
	queueIDPattern    = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)
	taskIDPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
)

// Messages production answers with (recorded from the real service), so callers that log or
// match them see the same text locally.
const (
	msgQueueNotFound    = "Queue does not exist. If you just created the queue, wait at least a minute for the queue to initialize."
	msgNotFound         = "Requested entity was not found."
	msgTaskExists       = "Requested entity already exists"
	msgQueueExists      = "Queue already exists"
	msgTaskRecentlyGone = "The task no longer exists, though a task with this name existed recently. The task either successfully completed or was deleted."
	msgQueueTooRecent   = "The queue cannot be created because a queue with this name existed too recently."
)

// parseParent splits projects/P/locations/L.
func parseParent(parent string) (project, location string, err error) {
	parts := strings.Split(parent, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != "locations" ||
		!projectIDPattern.MatchString(parts[1]) || !locationIDPattern.MatchString(parts[3]) {
		return "", "", status.Errorf(codes.InvalidArgument,
			"Parent must be formatted: \"projects/<PROJECT_ID>/locations/<LOCATION_ID>\", got %q.", parent)
	}
	return parts[1], parts[3], nil
}

// parseQueueName checks projects/P/locations/L/queues/Q and returns the parent and the queue id.
func parseQueueName(name string) (parent, id string, err error) {
	i := strings.LastIndex(name, "/queues/")
	if i < 0 {
		return "", "", invalidQueueName()
	}
	parent, id = name[:i], name[i+len("/queues/"):]
	if _, _, perr := parseParent(parent); perr != nil || !queueIDPattern.MatchString(id) {
		return "", "", invalidQueueName()
	}
	return parent, id, nil
}

func invalidQueueName() error {
	st := status.New(codes.InvalidArgument,
		`Queue name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/queues/<QUEUE_ID>".`)
	if d, err := st.WithDetails(&errdetails.Help{Links: []*errdetails.Help_Link{{
		Description: "Definition of queue name",
		Url:         "https://cloud.google.com/tasks/docs/reference/rest/v2/projects.locations.queues#Queue.FIELDS.name",
	}}}); err == nil {
		st = d
	}
	return st.Err()
}

// parseTaskName checks projects/P/locations/L/queues/Q/tasks/T and returns the queue name and the
// task id.
func parseTaskName(name string) (queueName, id string, err error) {
	i := strings.LastIndex(name, "/tasks/")
	if i < 0 {
		return "", "", status.Errorf(codes.InvalidArgument,
			`Task name must be formatted: "projects/<PROJECT_ID>/locations/<LOCATION_ID>/queues/<QUEUE_ID>/tasks/<TASK_ID>", got %q.`, name)
	}
	queueName, id = name[:i], name[i+len("/tasks/"):]
	if _, _, err := parseQueueName(queueName); err != nil {
		return "", "", err
	}
	if !taskIDPattern.MatchString(id) {
		return "", "", invalidTaskID(id)
	}
	return queueName, id, nil
}

func invalidTaskID(id string) error {
	st := status.Newf(codes.InvalidArgument,
		"Task ID %q can contain only letters ([A-Za-z]), numbers ([0-9]), hyphens (-), or underscores (_). Task ID must between 1 and 500 characters.", id)
	if d, err := st.WithDetails(&errdetails.Help{Links: []*errdetails.Help_Link{{
		Description: "Definition of task ID",
		Url:         "https://cloud.google.com/tasks/docs/reference/rest/v2/projects.locations.queues.tasks#Task.FIELDS.name",
	}}}); err == nil {
		st = d
	}
	return st.Err()
}
