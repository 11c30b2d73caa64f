package tasks

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wapipe/wapipe/internal/tenant"
)

// Queue IDs that the code relies on. Their definitions are in queues.yaml.
const (
	InboundQueueID  = "wa-inbound"
	OutboundQueueID = "wa-outbound"
)

// Tenant send queues: one per tenant, TenantQueuePrefix + the tenant's id, made from the
// TenantOutboundTemplate template of queues.yaml with the rate of the tenant's file.
const (
	TenantOutboundTemplate = "tenant-outbound"
	TenantQueuePrefix      = "wa-out-"
)

//go:embed queues.yaml
var embeddedQueues []byte

// EmbeddedQueuesYAML returns the queues.yaml compiled into the binary.
func EmbeddedQueuesYAML() []byte { return append([]byte(nil), embeddedQueues...) }

// QueueFile is the parsed queues.yaml.
type QueueFile struct {
	// Queues are wapipe's own queues, which Terraform and the emulator create.
	Queues map[string]Queue `yaml:"queues"`
	// Templates are the models of queues made at run time (TenantOutboundTemplate); nobody
	// creates a queue for a template itself. A template's ID is its name.
	Templates map[string]Queue `yaml:"templates"`
}

// Queue is one queue's definition, in the Cloud Tasks API's terms.
type Queue struct {
	ID                 string        `yaml:"-"`
	RateLimits         RateLimits    `yaml:"rate_limits"`
	RetryConfig        RetryConfig   `yaml:"retry_config"`
	StackdriverLogging LoggingConfig `yaml:"stackdriver_logging_config"`
}

// RateLimits mirrors google.cloud.tasks.v2.RateLimits.
type RateLimits struct {
	MaxDispatchesPerSecond  float64 `yaml:"max_dispatches_per_second"`
	MaxConcurrentDispatches int32   `yaml:"max_concurrent_dispatches"`
}

// RetryConfig mirrors google.cloud.tasks.v2.RetryConfig. MaxAttempts counts the first attempt; -1
// means unlimited. A zero MaxRetryDuration means no age limit.
type RetryConfig struct {
	MaxAttempts      int32    `yaml:"max_attempts"`
	MinBackoff       Duration `yaml:"min_backoff"`
	MaxBackoff       Duration `yaml:"max_backoff"`
	MaxDoublings     int32    `yaml:"max_doublings"`
	MaxRetryDuration Duration `yaml:"max_retry_duration"`
}

// LoggingConfig mirrors google.cloud.tasks.v2.StackdriverLoggingConfig.
type LoggingConfig struct {
	SamplingRatio float64 `yaml:"sampling_ratio"`
}

// Duration is a time.Duration written the way Cloud Tasks and Terraform write it: "5s", "0.5s".
type Duration struct{ time.Duration }

var durationPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,9})?s$`)

// UnmarshalYAML accepts only "<seconds>s", the one form both Go and Terraform read the same way.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	if !durationPattern.MatchString(s) {
		return fmt.Errorf("duration %q: want seconds with an s suffix, such as \"5s\"", s)
	}
	secs, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	d.Duration = time.Duration(secs * float64(time.Second))
	return nil
}

// MarshalYAML writes the duration back in seconds.
func (d Duration) MarshalYAML() (any, error) {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s", nil
}

var queueIDPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

// ParseQueues parses and validates a queues.yaml document.
func ParseQueues(data []byte) (*QueueFile, error) {
	var f QueueFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse queues: %w", err)
	}
	for id, q := range f.Queues {
		q.ID = id
		f.Queues[id] = q
	}
	for id, q := range f.Templates {
		q.ID = id
		f.Templates[id] = q
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// LoadQueues reads a queues file from disk; an empty path means the embedded file.
func LoadQueues(path string) (*QueueFile, error) {
	if path == "" {
		return ParseQueues(embeddedQueues)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read queues file: %w", err)
	}
	f, err := ParseQueues(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// DefaultQueues returns the embedded queue definitions. They are validated by the package's tests,
// so a failure here is a build defect.
func DefaultQueues() *QueueFile {
	f, err := ParseQueues(embeddedQueues)
	if err != nil {
		panic(fmt.Sprintf("embedded tasks/queues.yaml is invalid: %v", err))
	}
	return f
}

// Validate checks each queue against the limits Cloud Tasks enforces.
func (f *QueueFile) Validate() error {
	if len(f.Queues) == 0 {
		return errors.New("queues: no queue defined")
	}
	var errs []error
	for _, id := range f.IDs() {
		if err := f.Queues[id].validate(); err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", id, err))
		}
		if strings.HasPrefix(id, TenantQueuePrefix) {
			errs = append(errs, fmt.Errorf("queue %s: the prefix %s is for tenant queues", id, TenantQueuePrefix))
		}
	}
	for id, q := range f.Templates {
		if err := q.validate(); err != nil {
			errs = append(errs, fmt.Errorf("template %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (q Queue) validate() error {
	var errs []error
	if !queueIDPattern.MatchString(q.ID) {
		errs = append(errs, fmt.Errorf("id must match %s", queueIDPattern))
	}
	rl, rc := q.RateLimits, q.RetryConfig
	if rl.MaxDispatchesPerSecond <= 0 || rl.MaxDispatchesPerSecond > 500 {
		errs = append(errs, errors.New("rate_limits.max_dispatches_per_second must be in (0, 500]"))
	}
	if rl.MaxConcurrentDispatches < 1 || rl.MaxConcurrentDispatches > 5000 {
		errs = append(errs, errors.New("rate_limits.max_concurrent_dispatches must be in [1, 5000]"))
	}
	if rc.MaxAttempts == 0 || rc.MaxAttempts < -1 {
		errs = append(errs, errors.New("retry_config.max_attempts must be -1 (unlimited) or >= 1"))
	}
	if rc.MinBackoff.Duration <= 0 {
		errs = append(errs, errors.New("retry_config.min_backoff must be > 0"))
	}
	if rc.MaxBackoff.Duration < rc.MinBackoff.Duration {
		errs = append(errs, errors.New("retry_config.max_backoff must be >= min_backoff"))
	}
	if rc.MaxDoublings < 0 {
		errs = append(errs, errors.New("retry_config.max_doublings must be >= 0"))
	}
	if rc.MaxRetryDuration.Duration < 0 {
		errs = append(errs, errors.New("retry_config.max_retry_duration must be >= 0"))
	}
	if s := q.StackdriverLogging.SamplingRatio; s < 0 || s > 1 {
		errs = append(errs, errors.New("stackdriver_logging_config.sampling_ratio must be in [0, 1]"))
	}
	return errors.Join(errs...)
}

// IDs returns the queue ids in a stable order.
func (f *QueueFile) IDs() []string {
	ids := make([]string, 0, len(f.Queues))
	for id := range f.Queues {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Queue returns a queue by id. A tenant queue (TenantQueuePrefix + id) is the
// TenantOutboundTemplate template under that id, with the template's rate: what the worker needs
// of it is the retry policy (max_attempts), which the tenant's file does not change.
func (f *QueueFile) Queue(id string) (Queue, bool) {
	if q, ok := f.Queues[id]; ok {
		return q, true
	}
	if strings.HasPrefix(id, TenantQueuePrefix) && len(id) > len(TenantQueuePrefix) {
		if q, ok := f.Templates[TenantOutboundTemplate]; ok {
			q.ID = id
			return q, true
		}
	}
	return Queue{}, false
}

// TenantQueueID is the id of tenant tenantID's send queue.
func TenantQueueID(tenantID string) string { return TenantQueuePrefix + tenantID }

// TenantQueue is tenant tenantID's send queue as its file asks: the TenantOutboundTemplate
// template with the rate and concurrency of sending.
func (f *QueueFile) TenantQueue(tenantID string, s tenant.Sending) Queue {
	q := f.Templates[TenantOutboundTemplate]
	q.ID = TenantQueueID(tenantID)
	q.RateLimits = RateLimits{MaxDispatchesPerSecond: s.PerSecond, MaxConcurrentDispatches: int32(s.MaxConcurrent)}
	return q
}

// TenantQueue is DefaultQueues().TenantQueue: tenant tenantID's send queue from the embedded
// template.
func TenantQueue(tenantID string, s tenant.Sending) Queue {
	return DefaultQueues().TenantQueue(tenantID, s)
}

// QueueID returns the short id of a queue given either the id or the full resource name
// projects/P/locations/L/queues/Q, as INBOUND_TASK_QUEUE_NAME accepts both.
func QueueID(nameOrID string) string {
	if i := strings.LastIndex(nameOrID, "/queues/"); i >= 0 {
		return nameOrID[i+len("/queues/"):]
	}
	return nameOrID
}

// IsLastAttempt reports whether a task answering now, with Cloud Tasks' X-CloudTasks-TaskRetryCount
// header value retryCount, is on its last attempt, so a failure must be dead-lettered rather than
// retried. Cloud Tasks counts the first attempt in max_attempts, so attempt number retryCount+1 is
// the last when it equals max_attempts. An unlimited queue has no last attempt.
func (q Queue) IsLastAttempt(retryCount int) bool {
	max := q.RetryConfig.MaxAttempts
	return max > 0 && retryCount+1 >= int(max)
}

// LongestSendBackoff is the longest wait between two attempts of a send task: the outbound
// queue's and the tenant queues' max_backoff, whichever is longer. A send record untouched for
// much longer than this has no live task behind it (package delivery, HeldSweep).
func (f *QueueFile) LongestSendBackoff() time.Duration {
	var longest time.Duration
	if q, ok := f.Queues[OutboundQueueID]; ok {
		longest = q.RetryConfig.MaxBackoff.Duration
	}
	if q, ok := f.Templates[TenantOutboundTemplate]; ok {
		longest = max(longest, q.RetryConfig.MaxBackoff.Duration)
	}
	return longest
}
