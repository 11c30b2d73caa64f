package cloudtasksemu

import (
	"context"
	"strings"
	"time"

	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// betaService answers the part of google.cloud.tasks.v2beta3.CloudTasks that v2 lacks: queue
// statistics, which only v2beta3's GetQueue and ListQueues return, and only when the read_mask
// asks for "stats". It reads the same queues as the v2 service.
type betaService struct {
	betapb.UnimplementedCloudTasksServer
	s *Server
}

func (b *betaService) GetQueue(_ context.Context, req *betapb.GetQueueRequest) (*betapb.Queue, error) {
	q, err := b.s.queue(req.GetName())
	if err != nil {
		return nil, err
	}
	return q.betaProto(req.GetReadMask())
}

func (b *betaService) ListQueues(_ context.Context, req *betapb.ListQueuesRequest) (*betapb.ListQueuesResponse, error) {
	qs, next, err := b.s.listQueues(req.GetParent(), req.GetFilter(), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	resp := &betapb.ListQueuesResponse{NextPageToken: next}
	for _, q := range qs {
		out, err := q.betaProto(req.GetReadMask())
		if err != nil {
			return nil, err
		}
		resp.Queues = append(resp.Queues, out)
	}
	return resp, nil
}

// betaProto renders the queue in v2beta3's shape. Without a mask every field but stats is
// returned; with one, the fields it names (stats included).
func (q *queue) betaProto(mask *fieldmaskpb.FieldMask) (*betapb.Queue, error) {
	q.mu.Lock()
	now := time.Now().UnixNano()
	out := &betapb.Queue{
		Name: q.name,
		RateLimits: &betapb.RateLimits{
			MaxDispatchesPerSecond:  q.cfg.rate,
			MaxBurstSize:            q.cfg.burst,
			MaxConcurrentDispatches: q.cfg.maxConcurrent,
		},
		RetryConfig: &betapb.RetryConfig{
			MaxAttempts:  q.cfg.retry.maxAttempts,
			MinBackoff:   durationpb.New(q.cfg.retry.minBackoff),
			MaxBackoff:   durationpb.New(q.cfg.retry.maxBackoff),
			MaxDoublings: q.cfg.retry.maxDoublings,
		},
		State: betapb.Queue_RUNNING,
		Type:  betapb.Queue_PUSH,
	}
	if q.cfg.retry.maxRetryDuration > 0 {
		out.RetryConfig.MaxRetryDuration = durationpb.New(q.cfg.retry.maxRetryDuration)
	}
	if q.paused {
		out.State = betapb.Queue_PAUSED
	}
	if q.purgeTime != 0 {
		out.PurgeTime = timestamppb.New(time.Unix(0, q.purgeTime))
	}
	if q.cfg.samplingRatio > 0 {
		out.StackdriverLoggingConfig = &betapb.StackdriverLoggingConfig{SamplingRatio: q.cfg.samplingRatio}
	}
	stats := &betapb.QueueStats{
		TasksCount:                int64(len(q.tasks)),
		ExecutedLastMinuteCount:   q.executedLastMinute(now),
		ConcurrentDispatchesCount: int64(q.inflight),
		// The emulator never throttles below the configured rate.
		EffectiveExecutionRate: q.cfg.rate,
	}
	if len(q.waiting) > 0 {
		stats.OldestEstimatedArrivalTime = timestamppb.New(time.Unix(0, q.waiting[0].schedule))
	}
	q.mu.Unlock()

	if len(mask.GetPaths()) == 0 {
		return out, nil
	}
	out.Stats = stats
	m := out.ProtoReflect()
	fields := m.Descriptor().Fields()
	keep := make(map[protoreflect.Name]bool)
	for _, p := range mask.GetPaths() {
		top, _, _ := strings.Cut(p, ".")
		if fields.ByName(protoreflect.Name(top)) == nil {
			return nil, status.Errorf(codes.InvalidArgument, "Invalid read_mask path %q.", p)
		}
		keep[protoreflect.Name(top)] = true
	}
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); !keep[f.Name()] && f.Name() != "name" {
			m.Clear(f)
		}
	}
	return out, nil
}
