package taskqueue

import (
	"context"
	"fmt"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/tasks"
)

// EnsureQueue makes the queue q defines exist with q's rate limits, retry policy and logging:
// it creates the queue when there is none, updates it when it differs, and leaves it alone
// otherwise, so applying the same tenant file twice makes no queue change. It reports which it
// did.
func (a *Admin) EnsureQueue(ctx context.Context, q tasks.Queue) (created, updated bool, err error) {
	want := a.queueProto(q)
	got, err := a.v2.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: want.Name})
	switch {
	case status.Code(err) == codes.NotFound:
		if err := a.CreateQueue(ctx, q); err != nil {
			if status.Code(err) != codes.AlreadyExists {
				return false, false, err
			}
			// Created concurrently (two applies of one tenant): make sure it is ours.
			return a.ensureExisting(ctx, q, want)
		}
		return true, false, nil
	case err != nil:
		return false, false, fmt.Errorf("get queue %s: %w", q.ID, err)
	}
	if sameConfig(want, got) {
		return false, false, nil
	}
	if err := a.UpdateQueue(ctx, q); err != nil {
		return false, false, err
	}
	return false, true, nil
}

func (a *Admin) ensureExisting(ctx context.Context, q tasks.Queue, want *cloudtaskspb.Queue) (bool, bool, error) {
	got, err := a.v2.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: want.Name})
	if err != nil {
		return false, false, fmt.Errorf("get queue %s: %w", q.ID, err)
	}
	if sameConfig(want, got) {
		return false, false, nil
	}
	if err := a.UpdateQueue(ctx, q); err != nil {
		return false, false, err
	}
	return false, true, nil
}

// sameConfig compares what UpdateQueue sets. Cloud Tasks fills max_burst_size itself from the
// rate, and reports a zero max_retry_duration as unset, so those are not compared as sent.
func sameConfig(want, got *cloudtaskspb.Queue) bool {
	wr, gr := want.GetRateLimits(), got.GetRateLimits()
	if wr.GetMaxDispatchesPerSecond() != gr.GetMaxDispatchesPerSecond() ||
		wr.GetMaxConcurrentDispatches() != gr.GetMaxConcurrentDispatches() {
		return false
	}
	wc, gc := want.GetRetryConfig(), got.GetRetryConfig()
	if wc.GetMaxAttempts() != gc.GetMaxAttempts() || wc.GetMaxDoublings() != gc.GetMaxDoublings() ||
		wc.GetMinBackoff().AsDuration() != gc.GetMinBackoff().AsDuration() ||
		wc.GetMaxBackoff().AsDuration() != gc.GetMaxBackoff().AsDuration() ||
		wc.GetMaxRetryDuration().AsDuration() != gc.GetMaxRetryDuration().AsDuration() {
		return false
	}
	return want.GetStackdriverLoggingConfig().GetSamplingRatio() == got.GetStackdriverLoggingConfig().GetSamplingRatio()
}

// QueueConfig reads a queue's rate limits, retry policy and logging back (queue id or full
// name).
func (a *Admin) QueueConfig(ctx context.Context, queue string) (tasks.Queue, error) {
	name := a.QueuePath(queue)
	pb, err := a.v2.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: name})
	if err != nil {
		return tasks.Queue{}, fmt.Errorf("get queue %s: %w", name, err)
	}
	rl, rc := pb.GetRateLimits(), pb.GetRetryConfig()
	q := tasks.Queue{
		ID: tasks.QueueID(pb.GetName()),
		RateLimits: tasks.RateLimits{
			MaxDispatchesPerSecond:  rl.GetMaxDispatchesPerSecond(),
			MaxConcurrentDispatches: rl.GetMaxConcurrentDispatches(),
		},
		RetryConfig: tasks.RetryConfig{
			MaxAttempts:  rc.GetMaxAttempts(),
			MaxDoublings: rc.GetMaxDoublings(),
		},
		StackdriverLogging: tasks.LoggingConfig{SamplingRatio: pb.GetStackdriverLoggingConfig().GetSamplingRatio()},
	}
	q.RetryConfig.MinBackoff.Duration = rc.GetMinBackoff().AsDuration()
	q.RetryConfig.MaxBackoff.Duration = rc.GetMaxBackoff().AsDuration()
	q.RetryConfig.MaxRetryDuration.Duration = rc.GetMaxRetryDuration().AsDuration()
	return q, nil
}
