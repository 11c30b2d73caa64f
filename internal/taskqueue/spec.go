package taskqueue

import "github.com/wapipe/wapipe/tasks"

// FromSpec is the task of a tasks.Spec: the table of task routes (package tasks) decides a task's
// queue, id, route and body; this client only creates it.
func FromSpec(s tasks.Spec) Task {
	return Task{Queue: s.Queue, ID: s.ID, Path: s.Path, Body: s.Body, CorrelationID: s.CorrelationID}
}
