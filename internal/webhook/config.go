package webhook

import (
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/tasks"
)

// Dedupe fail modes: what the webhook does when the dedupe store cannot be reached.
const (
	FailClosed = "closed" // answer 500 so Meta redelivers later
	FailOpen   = "open"   // log loudly and enqueue anyway (dev only)
)

// Config is the webhook service's configuration, read from the environment.
type Config struct {
	config.Base

	InboundQueue   string        `env:"INBOUND_TASK_QUEUE_NAME, default=wa-inbound"`
	AppSecret      string        `env:"WHATSAPP_APP_SECRET, required"`
	VerifyToken    string        `env:"WHATSAPP_VERIFY_TOKEN, required"`
	DedupeTTL      time.Duration `env:"DEDUPE_TTL, default=168h"`
	DedupeFailMode string        `env:"DEDUPE_FAIL_MODE"`
	// MaxInflightBodyBytes bounds the body bytes held across all requests at once, charged as
	// they arrive (httpserver.Budget); a delivery whose next bytes cannot be charged promptly
	// answers 503 (Meta retries).
	MaxInflightBodyBytes int64 `env:"MAX_INFLIGHT_BODY_BYTES, default=67108864"`
	// UnverifiedBytesPerAddress bounds the share of MAX_INFLIGHT_BODY_BYTES one client address
	// holds in bodies whose signature is not checked yet, so wrongly signed uploads from one
	// address cannot leave genuine deliveries from others without room (503 for that address
	// only). 0 means a quarter of the budget (unverifiedShare).
	UnverifiedBytesPerAddress int64 `env:"WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS"`
	// CallBudget bounds a delivery's mark_if_new and CreateTask together, so an unreachable
	// store or queue is answered (500 fail closed, or enqueued fail open) well inside Meta's
	// 5 s timeout instead of at it.
	CallBudget time.Duration `env:"WEBHOOK_CALL_BUDGET, default=1500ms"`
}

// DefaultCallBudget is WEBHOOK_CALL_BUDGET's default: a Firestore create and a CreateTask take
// milliseconds, and an answer within 2 s leaves Meta's 5 s timeout far away.
const DefaultCallBudget = 1500 * time.Millisecond

// Bounds of WEBHOOK_CALL_BUDGET: under the floor a slow moment of Firestore would fail healthy
// deliveries; over the ceiling the answer would come too close to Meta's 5 s timeout.
const (
	minCallBudget = 300 * time.Millisecond
	maxCallBudget = 4 * time.Second
)

// DefaultMaxInflightBodyBytes is MAX_INFLIGHT_BODY_BYTES's default: 64 MiB, 16 bodies at the
// 4 MiB cap, an eighth of a 512 MiB container.
const DefaultMaxInflightBodyBytes = 64 << 20

// DefaultUnverifiedBytesPerAddress is WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS's default with the
// default budget: a quarter of it, 16 MiB. Meta delivers from many addresses, a few of them in
// parallel; one address still fits three deliveries at the 4 MiB cap at once (each charged about
// 5.3 MiB with its outgrown buffers), a dozen of 1 MB or a thousand of a typical few KB, while the
// wrongly signed uploads of one address leave three quarters of the budget to everyone else.
const DefaultUnverifiedBytesPerAddress = DefaultMaxInflightBodyBytes / 4

// minUnverifiedBytesPerAddress is the least share that still holds one delivery at the cap with
// its outgrown buffers (ReadAll charges an honest body under 1.5 times its size).
const minUnverifiedBytesPerAddress = MaxBodyBytes * 3 / 2

// unverifiedShare is WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS's default for a budget: a quarter of
// it, but never under one delivery at the cap (nor over the budget).
func unverifiedShare(budget int64) int64 {
	return min(max(budget/4, minUnverifiedBytesPerAddress), budget)
}

// SetDefaults settles DEDUPE_FAIL_MODE's default (closed, except open in dev) and, for a config
// built by hand, MAX_INFLIGHT_BODY_BYTES's and WEBHOOK_CALL_BUDGET's.
func (c *Config) SetDefaults() {
	if c.MaxInflightBodyBytes == 0 {
		c.MaxInflightBodyBytes = DefaultMaxInflightBodyBytes
	}
	if c.UnverifiedBytesPerAddress == 0 {
		c.UnverifiedBytesPerAddress = unverifiedShare(c.MaxInflightBodyBytes)
	}
	if c.CallBudget == 0 {
		c.CallBudget = DefaultCallBudget
	}
	if c.DedupeFailMode == "" {
		c.DedupeFailMode = FailClosed
		if c.IsDev() {
			c.DedupeFailMode = FailOpen
		}
	}
}

// Validate checks the webhook's values on top of the shared ones. It changes nothing; an empty
// DEDUPE_FAIL_MODE (before SetDefaults) counts as closed, a zero MAX_INFLIGHT_BODY_BYTES as the
// default.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	// required only asks that a variable exist: an empty app secret would let anyone sign.
	if c.AppSecret == "" {
		errs = append(errs, errors.New("WHATSAPP_APP_SECRET: must not be empty"))
	}
	if c.VerifyToken == "" {
		errs = append(errs, errors.New("WHATSAPP_VERIFY_TOKEN: must not be empty"))
	}
	// Its inbound tasks carry its own invoker's token: the only one process_inbound admits.
	errs = append(errs, tasks.CheckInvoker(c.TasksServiceAccountEmail, c.IsDev()))
	if _, ok := tasks.DefaultQueues().Queue(tasks.QueueID(c.InboundQueue)); !ok {
		errs = append(errs, fmt.Errorf("INBOUND_TASK_QUEUE_NAME: queue %q is not defined in tasks/queues.yaml", tasks.QueueID(c.InboundQueue)))
	}
	if c.DedupeTTL <= 0 {
		errs = append(errs, errors.New("DEDUPE_TTL: must be a positive duration"))
	}
	if c.MaxInflightBodyBytes != 0 && c.MaxInflightBodyBytes < MaxBodyBytes {
		errs = append(errs, fmt.Errorf("MAX_INFLIGHT_BODY_BYTES: must be at least the body cap, %d", MaxBodyBytes))
	}
	if err := c.validateUnverifiedShare(); err != nil {
		errs = append(errs, err)
	}
	if c.CallBudget != 0 && (c.CallBudget < minCallBudget || c.CallBudget > maxCallBudget) {
		errs = append(errs, fmt.Errorf("WEBHOOK_CALL_BUDGET: must be between %s and %s, got %s", minCallBudget, maxCallBudget, c.CallBudget))
	}
	switch c.DedupeFailMode {
	case "", FailClosed:
	case FailOpen:
		if !c.IsDev() {
			errs = append(errs, fmt.Errorf("DEDUPE_FAIL_MODE: open is allowed only when APP_ENV=dev, not %s", c.AppEnv))
		}
	default:
		errs = append(errs, fmt.Errorf("DEDUPE_FAIL_MODE: must be closed or open, got %q", c.DedupeFailMode))
	}
	return errors.Join(errs...)
}

// validateUnverifiedShare checks WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS (0 counts as its default):
// a share that holds one delivery at the cap, and no more than the whole budget.
func (c *Config) validateUnverifiedShare() error {
	budget := c.MaxInflightBodyBytes
	if budget == 0 {
		budget = DefaultMaxInflightBodyBytes
	}
	share := c.UnverifiedBytesPerAddress
	if share == 0 {
		share = unverifiedShare(budget)
	}
	// A budget smaller than the least share is all one address's.
	if least := min(minUnverifiedBytesPerAddress, budget); share < least || share > budget {
		return fmt.Errorf("WEBHOOK_UNVERIFIED_BYTES_PER_ADDRESS: must be from %d (one delivery at the body cap) to MAX_INFLIGHT_BODY_BYTES (%d), got %d",
			least, budget, share)
	}
	return nil
}
