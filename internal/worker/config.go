package worker

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// DefaultGraphAPIBaseURL is the Graph API version wapipe is written against.
const DefaultGraphAPIBaseURL = "https://graph.facebook.com/v24.0"

// Config is the worker service's configuration, read from the environment.
type Config struct {
	config.Base

	OutboundQueue string `env:"OUTBOUND_TASK_QUEUE_NAME, default=wa-outbound"`
	// InboundQueue is read for health only (its backlog); the webhook is the one that enqueues.
	InboundQueue    string `env:"INBOUND_TASK_QUEUE_NAME, default=wa-inbound"`
	GraphAPIBaseURL string `env:"GRAPH_API_BASE_URL, default=https://graph.facebook.com/v24.0"`
	AccessToken     string `env:"WHATSAPP_ACCESS_TOKEN, required"`
	// KMSKeyName is the Cloud KMS key that seals tenant secrets (access tokens): required outside
	// dev; with it unset and APP_ENV=dev, the shared development key (package secrets).
	KMSKeyName string `env:"KMS_KEY_NAME"`
	// AckText is the default Responder's answer to a text message.
	AckText string `env:"REPLY_ACK_TEXT"`
	// OIDCVerifiedByPlatform says Cloud Run (IAM required, invoker only) verifies each task's OIDC
	// token before the request reaches the worker, and hands it on with its signature removed.
	// Terraform sets it for the IAM-only worker; without it a token must carry its signature.
	OIDCVerifiedByPlatform bool `env:"OIDC_VERIFIED_BY_PLATFORM, default=false"`
}

// Validate checks the worker's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	if u, err := url.Parse(c.GraphAPIBaseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		errs = append(errs, errors.New("GRAPH_API_BASE_URL: must be an absolute http(s) URL"))
	} else if u.Scheme != "https" && !c.IsDev() {
		errs = append(errs, errors.New("GRAPH_API_BASE_URL: must be https outside dev"))
	}
	if c.OIDCVerifiedByPlatform && c.TasksServiceAccountEmail == "" {
		errs = append(errs, errors.New("OIDC_VERIFIED_BY_PLATFORM: needs TASKS_SERVICE_ACCOUNT_EMAIL (the account whose tokens the platform verifies)"))
	}
	if err := (secrets.Config{KMSKeyName: c.KMSKeyName, Dev: c.IsDev()}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.AccessToken == "" {
		errs = append(errs, errors.New("WHATSAPP_ACCESS_TOKEN: must not be empty"))
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

// OIDCVerifier returns the verifier of the tasks' OIDC tokens, or nil when tasks carry none
// (TASKS_SERVICE_ACCOUNT_EMAIL unset). Tokens come from Google in production and from the
// emulator's issuer locally; the audience is the worker's base URL.
func (c *Config) OIDCVerifier() *OIDCVerifier {
	if c.TasksServiceAccountEmail == "" {
		return nil
	}
	issuer := GoogleIssuer
	if c.TasksEmulatorHost != "" {
		issuer = "http://" + c.TasksEmulatorHost
	}
	return NewOIDCVerifier(issuer, taskqueue.Audience(c.InternalTaskBaseURL), c.OIDCVerifiedByPlatform)
}
