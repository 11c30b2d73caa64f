package worker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// hangingStore is a Firestore that never answers: every call waits for its context to end.
type hangingStore struct{ *fakeRecords }

func (hangingStore) StatusSeen(ctx context.Context, _ string) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

func (hangingStore) PutTrace(ctx context.Context, _ store.Trace) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestInboundStoreUnreachableAnswersInSeconds: with Firestore not answering, process_inbound
// gives up on each store call after its timeout and answers 503 (Cloud Tasks retries), instead of
// holding the attempt until Cloud Tasks' dispatch deadline.
func TestInboundStoreUnreachableAnswersInSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the store-call timeout")
	}
	t.Parallel()
	tests := []struct {
		name    string
		payload []byte
	}{
		{"text (its trace)", whatsapp.SampleText(whatsapp.SampleOptions{}, "hi")},
		{"status (its dedupe read)", whatsapp.SampleStatus(whatsapp.SampleOptions{MessageID: "wamid.out"}, "read")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHarness(t)
			down := hangingStore{hs.records}
			cfg := &worker.Config{OutboundQueue: tasks.OutboundQueueID, InboundQueue: tasks.InboundQueueID, AccessToken: defaultAccessToken}
			cfg.InternalTaskToken = internalToken
			hs.h = worker.NewServer(cfg, worker.Deps{
				Tasks: hs.queue, Payloads: hs.payloads,
				Outbound: hs.records, Statuses: down, Traces: down, DeadLetters: hs.records,
				Sender: hs.sender, Responder: hs.responder, Hasher: hs.hasher,
				Logger: logging.New(hs.logs, logging.Options{Level: slog.LevelDebug, Hasher: hs.hasher}),
			}).Routes()
			start := time.Now()
			got := hs.run(tasks.ProcessInboundPath, inboundTask("evt-1", tc.payload), attempt{})
			took := time.Since(start)
			t.Logf("answered %d after %s", got.Code, took.Round(time.Millisecond))
			if got.Code != 503 {
				t.Errorf("answer %d, want 503", got.Code)
			}
			// Cloud Tasks waits up to 10 minutes for an HTTP task by default; a minute is far.
			if took > time.Minute {
				t.Errorf("answered after %s", took)
			}
		})
	}
}
