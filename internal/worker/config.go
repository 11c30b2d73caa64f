package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/wapipe/wapipe/internal/admission"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/conversation"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/identity"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// DefaultGraphAPIBaseURL is the Graph API base URL when GRAPH_API_BASE_URL is unset.
const DefaultGraphAPIBaseURL = graph.DefaultBaseURL

// Config is the worker service's configuration, read from the environment.
type Config struct {
	config.Base

	OutboundQueue string `env:"OUTBOUND_TASK_QUEUE_NAME, default=wa-outbound"`
	// InboundQueue is read for health only (its backlog); the webhook is the one that enqueues.
	InboundQueue string `env:"INBOUND_TASK_QUEUE_NAME, default=wa-inbound"`
	// GraphAPIBaseURL defaults (SetDefaults) to DefaultGraphAPIBaseURL, built from graph.Version.
	GraphAPIBaseURL string `env:"GRAPH_API_BASE_URL"`
	// AccessToken serves the single-tenant default: messages to a number no tenant owns. Empty
	// means such messages are not answered (logged as unrouted).
	AccessToken string `env:"WHATSAPP_ACCESS_TOKEN"`
	// KMSKeyName is the Cloud KMS key that seals the tenants' access tokens; required outside
	// dev, where an unset value means the development key.
	KMSKeyName string `env:"KMS_KEY_NAME"`
	// AckText is the default Responder's answer to a text message.
	AckText string `env:"REPLY_ACK_TEXT"`
	// LLMBaseURL points the assistant at a Vertex AI compatible fake, without credentials: dev
	// only. Empty means the regional Vertex AI endpoint with the service's credentials.
	LLMBaseURL string `env:"LLM_BASE_URL"`
	// LLMLocation is the Vertex AI region.
	LLMLocation string `env:"LLM_LOCATION, default=us-central1"`
	// ConversationRetention is how long conversations, their messages and actions are kept
	// after the last message.
	ConversationRetention time.Duration `env:"CONVERSATION_RETENTION, default=2160h"`
	// ConversationLease is how long the task that runs a conversation's turns holds it without
	// committing a turn: longer than one turn (an LLM call and its retry), and as short as that
	// allows, since a killed holder's conversation waits that long for its task's retry.
	ConversationLease time.Duration `env:"CONVERSATION_LEASE, default=60s"`
	// MediaMaxBytes caps the media files the assistant fetches for Gemini (read inline: base64
	// makes them a third larger, and Vertex AI refuses inline data past about 20 MB).
	MediaMaxBytes int64 `env:"MEDIA_MAX_BYTES, default=15728640"`
	// MediaInflightBytes bounds the bytes this instance's media turns hold at once: each file is
	// charged three times its size (the file, its base64, the request the Gemini SDK builds)
	// until its model call is done; a turn that cannot get its share promptly is retried (503).
	MediaInflightBytes int64 `env:"MEDIA_INFLIGHT_BYTES, default=100663296"`
	// ReconcileWindow is how long a send of unknown outcome waits for its status webhook before
	// the evidence decides (a resend, or a wait held on the record); UnknownMaxWait caps that
	// held wait, after which the send is given up as a dead letter (package delivery).
	ReconcileWindow time.Duration `env:"RECONCILE_WINDOW, default=15m"`
	UnknownMaxWait  time.Duration `env:"UNKNOWN_OUTCOME_MAX_WAIT, default=24h"`
	// QueuesFile, dev only, is a queues.yaml to read instead of the embedded one, as the local
	// Cloud Tasks emulator was given (its --queues): the chaos run's queues with few attempts,
	// whose last attempts the worker must know.
	QueuesFile string `env:"TASKS_QUEUES_FILE"`
	// Callers are who may call the worker (package admission): OIDC_VERIFIED_BY_PLATFORM,
	// INTERNAL_CALLERS, ROUTE_CALLERS.
	admission.Callers
}

// SetDefaults fills the values a Config built in code (devstack, tests) leaves zero, as Load's
// defaults would.
func (c *Config) SetDefaults() {
	if c.GraphAPIBaseURL == "" {
		c.GraphAPIBaseURL = DefaultGraphAPIBaseURL
	}
	if c.LLMLocation == "" {
		c.LLMLocation = llm.DefaultLocation
	}
	if c.ConversationRetention == 0 {
		c.ConversationRetention = store.DefaultConversationRetention
	}
	if c.ConversationLease == 0 {
		c.ConversationLease = conversation.DefaultLease
	}
	if c.MediaMaxBytes == 0 {
		c.MediaMaxBytes = media.DefaultMaxBytes
	}
	if c.MediaInflightBytes == 0 {
		c.MediaInflightBytes = media.DefaultInflightBytes
	}
	if c.ReconcileWindow == 0 {
		c.ReconcileWindow = store.DefaultReconcileWindow
	}
	if c.UnknownMaxWait == 0 {
		c.UnknownMaxWait = delivery.DefaultMaxUnknownWait
	}
}

// Validate checks the worker's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	if err := c.CheckServiceURL("GRAPH_API_BASE_URL", c.GraphAPIBaseURL); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.Callers.Validate(c.TasksServiceAccountEmail, c.AppEnv, c.IsDev()))
	if c.LLMBaseURL != "" {
		if err := config.CheckHTTPURL("LLM_BASE_URL", c.LLMBaseURL); err != nil {
			errs = append(errs, err)
		} else if !c.IsDev() {
			errs = append(errs, errors.New("LLM_BASE_URL: dev only (it sends no credentials); leave it unset to use Vertex AI"))
		}
	}
	if c.LLMLocation == "" {
		errs = append(errs, errors.New("LLM_LOCATION: must name a Vertex AI region, such as us-central1"))
	}
	if c.ConversationRetention < time.Hour {
		errs = append(errs, errors.New("CONVERSATION_RETENTION: must be at least 1h (default 2160h, 90 days)"))
	}
	if c.ConversationLease < 2*time.Second || c.ConversationLease > 10*time.Minute {
		errs = append(errs, errors.New("CONVERSATION_LEASE: must be between 2s and 10m (default 60s)"))
	}
	// In dev a shorter window lets a run of minutes see the evidence decide.
	if minWindow := map[bool]time.Duration{true: 5 * time.Second, false: time.Minute}[c.IsDev()]; c.ReconcileWindow < minWindow || c.ReconcileWindow > 6*time.Hour {
		errs = append(errs, fmt.Errorf("RECONCILE_WINDOW: must be between %s and 6h (default 15m)", minWindow))
	}
	if c.QueuesFile != "" && !c.IsDev() {
		errs = append(errs, errors.New("TASKS_QUEUES_FILE: dev only (outside dev the worker reads the queues.yaml it was built with, as Terraform does)"))
	}
	if c.UnknownMaxWait < c.ReconcileWindow || c.UnknownMaxWait > 7*24*time.Hour {
		errs = append(errs, errors.New("UNKNOWN_OUTCOME_MAX_WAIT: must be at least RECONCILE_WINDOW and at most 168h (default 24h)"))
	}
	if c.MediaMaxBytes < 1 || c.MediaMaxBytes > media.MaxAllowedBytes {
		errs = append(errs, fmt.Errorf("MEDIA_MAX_BYTES: must be 1 to %d bytes (default %d, 15 MiB)", media.MaxAllowedBytes, media.DefaultMaxBytes))
	}
	if c.MediaInflightBytes < media.Footprint*c.MediaMaxBytes {
		errs = append(errs, fmt.Errorf("MEDIA_INFLIGHT_BYTES: must be at least %d times MEDIA_MAX_BYTES, %d bytes, so a file at the cap fits (default %d, 96 MiB)",
			media.Footprint, media.Footprint*c.MediaMaxBytes, media.DefaultInflightBytes))
	}
	if err := c.Secrets().Validate(); err != nil {
		errs = append(errs, err)
	}
	// The worker knows a task's last attempt (dead letters) from the queue's definition: a queue
	// missing from queues.yaml would silently never dead-letter.
	for _, q := range []struct{ env, id string }{
		{"OUTBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.OutboundQueue)},
		{"INBOUND_TASK_QUEUE_NAME", tasks.QueueID(c.InboundQueue)},
	} {
		if _, ok := tasks.DefaultQueues().Queue(q.id); !ok {
			errs = append(errs, fmt.Errorf("%s: queue %q is not defined in tasks/queues.yaml", q.env, q.id))
		}
	}
	return errors.Join(errs...)
}

// Queues is the queues.yaml of TASKS_QUEUES_FILE, nil without one (the embedded one).
func (c *Config) Queues() (*tasks.QueueFile, error) {
	if c.QueuesFile == "" {
		return nil, nil
	}
	f, err := tasks.LoadQueues(c.QueuesFile)
	if err != nil {
		return nil, fmt.Errorf("TASKS_QUEUES_FILE: %w", err)
	}
	return f, nil
}

// Secrets is the configuration of the keeper that opens the tenants' access tokens.
func (c *Config) Secrets() secrets.Config {
	return secrets.Config{KMSKeyName: c.KMSKeyName, Dev: c.IsDev()}
}

// OIDCVerifier returns the verifier of the OIDC tokens of the worker's callers, or nil when they
// carry none (admission.Callers.Verifier); the audience is the worker's base URL.
func (c *Config) OIDCVerifier() *identity.OIDCVerifier {
	return c.Callers.Verifier(c.TasksServiceAccountEmail, c.TasksEmulatorHost, taskqueue.Audience(c.InternalTaskBaseURL))
}
