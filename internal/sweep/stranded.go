package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Inboxes are the conversations the stranded-inbox job reads; *store.ConversationStore
// implements it.
type Inboxes interface {
	Stranded(ctx context.Context, before time.Time, limit int) ([]store.Conversation, error)
	NextInbox(ctx context.Context, conversationID, skip string) (store.Message, bool, error)
	ClearExpiredLease(ctx context.Context, conversationID string, lease store.Lease) (bool, error)
}

// TenantReader reads a tenant (store.ErrNotFound when there is none); *store.Tenants implements
// it.
type TenantReader interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
}

// Enqueuer creates tasks; *taskqueue.Client implements it.
type Enqueuer interface {
	Enqueue(ctx context.Context, t taskqueue.Task) (taskqueue.Result, error)
}

// DefaultStrandedGrace is how long after its lease expired a conversation still holding
// messages is left to its tasks' own retries before the sweep drains it: a holder killed on an
// attempt that will be retried is taken over by that retry, and only a holder killed on its last
// attempt leaves nobody.
const DefaultStrandedGrace = time.Minute

// DefaultStrandedLimit bounds the conversations one sweep drains; the rest are the next
// minute's.
const DefaultStrandedLimit = 100

// StrandedInboxes is the job that runs again the conversations whose holder died with messages
// still in their inbox (package conversation: a SIGKILL during a task's last attempt leaves the
// lease to expire and no task to take over). For each, it creates a task that drains the inbox:
// the process_outbound task of its oldest inbox message, rebuilt from what the inbox stored,
// which runs exactly as that message's own retry would (it finds the message in the inbox,
// takes the expired lease with a higher fencing number and drains; effects are idempotent, so
// nothing is answered twice). The task is named from the conversation and the sweep's minute,
// since the message's own task name stays reserved for about an hour after it ran: two sweeps
// in one minute make one task.
type StrandedInboxes struct {
	Inboxes Inboxes
	Tasks   Enqueuer
	// Tenants, when set, is read for each stranded conversation with messages: a deleted
	// tenant's conversations stay until they expire, and its queue is gone, so there is nobody
	// to answer for and nowhere to put a task. Its expired lease is released instead (as the
	// worker would answer nothing: tenant_not_found), so it is not found again.
	Tenants TenantReader
	// Keyer makes the task's idempotency key (tasks.IdempotencyKey), as the fan-out does; the
	// development key's when nil.
	Keyer *keyedid.Keyer
	// Grace is DefaultStrandedGrace when zero; Limit DefaultStrandedLimit.
	Grace time.Duration
	Limit int
}

// Name is the job's name.
func (j *StrandedInboxes) Name() string { return "stranded_inboxes" }

// Sweep drains each conversation whose lease expired Grace before now without being released:
// Found counts those with messages in their inbox, Done the drain tasks created (or found
// created, AlreadyExists). A stranded conversation whose inbox is empty (its holder died after
// its last message), that moved, or whose tenant was deleted has its expired lease released, so
// it is not found again.
func (j *StrandedInboxes) Sweep(ctx context.Context, now time.Time) (Result, error) {
	grace, limit := j.Grace, j.Limit
	if grace <= 0 {
		grace = DefaultStrandedGrace
	}
	if limit <= 0 {
		limit = DefaultStrandedLimit
	}
	convs, err := j.Inboxes.Stranded(ctx, now.Add(-grace), limit)
	if err != nil {
		return Result{}, fmt.Errorf("find stranded conversations: %w", err)
	}
	var res Result
	var errs []error
	for i, conv := range convs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%d stranded conversations left for the next sweep: %w", len(convs)-i, err))
			break
		}
		found, err := j.drain(ctx, conv, now)
		if found {
			res.Found++
		}
		if err != nil {
			errs = append(errs, err)
		} else if found {
			res.Done++
		}
	}
	return res, errors.Join(errs...)
}

// drain creates the task that drains conv, or releases its expired lease when there is nothing
// to drain; found says whether its inbox holds messages.
func (j *StrandedInboxes) drain(ctx context.Context, conv store.Conversation, now time.Time) (found bool, err error) {
	ctx, logger := logging.With(ctx, "conversation_id", conv.ID, "tenant_id", conv.TenantID)
	var m store.Message
	if conv.MovedTo == "" {
		// A moved conversation's messages live on where it moved to; its own inbox is history.
		m, found, err = j.Inboxes.NextInbox(ctx, conv.ID, "")
		if err != nil {
			return false, fmt.Errorf("read the inbox of conversation %s: %w", conv.ID, err)
		}
	}
	if !found {
		cleared, err := j.Inboxes.ClearExpiredLease(ctx, conv.ID, conv.Lease)
		if err != nil {
			return false, fmt.Errorf("release the expired lease of conversation %s: %w", conv.ID, err)
		}
		if cleared {
			logger.InfoContext(ctx, "expired lease released: nothing waits in the inbox", "event", "conversation_lease_cleared",
				"fence", conv.Lease.Fence, "lease_expires_at", conv.Lease.ExpiresAt)
		}
		return false, nil
	}
	if gone, err := j.tenantGone(ctx, conv); err != nil || gone {
		return false, err
	}
	t, err := drainTask(j.Keyer, conv, m, now)
	if err != nil {
		return true, fmt.Errorf("drain task of conversation %s: %w", conv.ID, err)
	}
	res, err := j.Tasks.Enqueue(ctx, t)
	if err != nil {
		return true, fmt.Errorf("create the drain task of conversation %s: %w", conv.ID, err)
	}
	logger.InfoContext(ctx, "stranded inbox: a task drains it", "event", "conversation_swept", "task_id", t.ID,
		"existed", res.Existed, "fence", conv.Lease.Fence, "lease_expires_at", conv.Lease.ExpiresAt)
	return true, nil
}

// drainTask is the process_outbound task of inbox message m of conv (the body the fan-out made
// for it, rebuilt from the inbound message the runner stored) on the tenant's queue, named for
// the sweep of now.
func drainTask(k *keyedid.Keyer, conv store.Conversation, m store.Message, now time.Time) (taskqueue.Task, error) {
	var in conversation.Inbound
	if err := json.Unmarshal([]byte(m.Payload), &in); err != nil {
		return taskqueue.Task{}, fmt.Errorf("decode the stored inbound message: %w", err)
	}
	if in.MessageID == "" {
		in.MessageID = m.MessageID
	}
	tenantID := conv.TenantID
	if tenantID == "" {
		tenantID = in.TenantID
	}
	if tenantID == "" || in.PhoneNumberID == "" || in.MessageID == "" {
		return taskqueue.Task{}, errors.New("the stored inbound message names no tenant, number or message id")
	}
	if k == nil {
		k = keyedid.Dev()
	}
	to := in.Person.WaID
	if to == "" {
		to = in.Contact
	}
	task, err := tasks.NewTask(tasks.Outbound{
		IdempotencyKey: tasks.IdempotencyKey(k, in.MessageID), CorrelationID: in.CorrelationID, InboundEventID: in.InboundEventID,
		PhoneNumberID: in.PhoneNumberID, To: to, UserID: in.Person.UserID, Message: in.Message, ReceivedAt: in.ReceivedAt,
		TenantID: tenantID,
	})
	if err != nil {
		return taskqueue.Task{}, fmt.Errorf("the drain task: %w", err)
	}
	task.ID = DrainTaskID(conv.ID, now)
	return taskqueue.FromSpec(task), nil
}

// DrainTaskID is the id of the task that drains conversation conversationID's inbox, made by
// the sweep at at: one per conversation and minute (UTC). The message's own task name cannot
// be used again (Cloud Tasks keeps it reserved for about an hour after the task ran), and a hash
// first keeps the names from being sequential, which Cloud Tasks advises against.
func DrainTaskID(conversationID string, at time.Time) string {
	minute := at.UTC().Format("200601021504")
	sum := sha256.Sum256([]byte("sweep\x00" + conversationID + "\x00" + minute))
	return hex.EncodeToString(sum[:16]) + "-" + minute + "-sweep"
}

// tenantGone reports whether conv's tenant was deleted, and then releases conv's expired lease.
func (j *StrandedInboxes) tenantGone(ctx context.Context, conv store.Conversation) (bool, error) {
	if j.Tenants == nil || conv.TenantID == "" {
		return false, nil
	}
	_, err := j.Tenants.Get(ctx, conv.TenantID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return false, fmt.Errorf("read the tenant of conversation %s: %w", conv.ID, err)
	default:
		return false, nil
	}
	if _, err := j.Inboxes.ClearExpiredLease(ctx, conv.ID, conv.Lease); err != nil {
		return true, fmt.Errorf("release the expired lease of conversation %s: %w", conv.ID, err)
	}
	logging.FromContext(ctx).WarnContext(ctx, "stranded inbox of a deleted tenant: not run, its lease released", "event", "conversation_sweep_tenant_gone",
		"fence", conv.Lease.Fence)
	return true, nil
}
