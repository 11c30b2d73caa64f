package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/telemetry"
)

// Application environments. prod is the default because it is the strictest.
const (
	EnvDev     = "dev"
	EnvStaging = "staging"
	EnvProd    = "prod"
)

// Base is the configuration both services read.
type Base struct {
	AppEnv            string `env:"APP_ENV, default=prod"`
	ProjectID         string `env:"GOOGLE_CLOUD_PROJECT, required"`
	FirestoreDatabase string `env:"FIRESTORE_DATABASE, default=(default)"`
	// InboundFirestoreDatabase holds what the public webhook writes (inbound_events and their
	// payload_chunks), so that its identity can be granted that database and nothing else: a
	// compromised webhook cannot read or write tenants, keys or conversations. Empty means
	// FIRESTORE_DATABASE (dev, tests, older deployments). See InboundDatabase.
	InboundFirestoreDatabase string `env:"INBOUND_FIRESTORE_DATABASE"`
	// TasksEmulatorHost points the Cloud Tasks client at an emulator (gRPC, no TLS, no auth).
	TasksEmulatorHost        string `env:"CLOUD_TASKS_EMULATOR_HOST"`
	TasksLocation            string `env:"TASKS_LOCATION, required"`
	InternalTaskBaseURL      string `env:"INTERNAL_TASK_BASE_URL, required"`
	InternalTaskToken        string `env:"INTERNAL_TASK_TOKEN, required"`
	TasksServiceAccountEmail string `env:"TASKS_SERVICE_ACCOUNT_EMAIL"`
	Port                     string `env:"PORT, default=8080"`
	LogLevel                 string `env:"LOG_LEVEL, default=INFO"`
	// TraceExporter is none, cloudtrace or stdout; empty means cloudtrace outside dev, none in dev.
	TraceExporter    string  `env:"TRACE_EXPORTER"`
	TraceSampleRatio float64 `env:"TRACE_SAMPLE_RATIO, default=1"`
	// LogHashKey keys the refs that stand for ids and phone numbers in logs (CONTRACT.md, Logs):
	// required outside dev, logging.DevHashKey in dev when empty. The same in every service.
	LogHashKey string `env:"LOG_HASH_KEY"`
	// LogHashKeyPrevious is the LOG_HASH_KEY in use before a rotation: the ids of people made
	// with it (keyedid) are still read until `wapipe migrate --rekey` has moved them. Unset
	// outside a rotation.
	LogHashKeyPrevious string `env:"LOG_HASH_KEY_PREVIOUS"`
}

// Validate checks the values the environment gave. It changes nothing.
func (b *Base) Validate() error {
	var errs []error
	switch b.AppEnv {
	case EnvDev, EnvStaging, EnvProd:
	default:
		errs = append(errs, fmt.Errorf("APP_ENV: must be dev, staging or prod, got %q", b.AppEnv))
	}
	if err := b.CheckServiceURL("INTERNAL_TASK_BASE_URL", b.InternalTaskBaseURL); err != nil {
		errs = append(errs, err)
	}
	if b.InternalTaskToken == "" {
		errs = append(errs, errors.New("INTERNAL_TASK_TOKEN: must not be empty"))
	} else if len(b.InternalTaskToken) < 16 && b.AppEnv != EnvDev {
		errs = append(errs, errors.New("INTERNAL_TASK_TOKEN: must be at least 16 characters outside dev"))
	}
	if b.TraceSampleRatio < 0 || b.TraceSampleRatio > 1 {
		errs = append(errs, errors.New("TRACE_SAMPLE_RATIO: must be between 0 and 1"))
	}
	switch b.TraceExporter {
	case "", "none", "cloudtrace", "stdout":
	default:
		errs = append(errs, fmt.Errorf("TRACE_EXPORTER: must be none, cloudtrace or stdout, got %q", b.TraceExporter))
	}
	if _, err := logging.Level(b.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %w", err))
	}
	if _, err := logging.HasherFromEnv(b.LogHashKey, b.AppEnv); err != nil {
		errs = append(errs, err)
	} else if b.LogHashKey == logging.DevHashKey && b.AppEnv != EnvDev {
		// The dev key is public: refs made with it are as reversible as a plain hash of the number.
		errs = append(errs, fmt.Errorf("LOG_HASH_KEY: is the public dev default, refused when APP_ENV is %s; set a secret key", b.AppEnv))
	}
	if b.LogHashKeyPrevious != "" {
		if _, err := logging.NewHasher(b.LogHashKeyPrevious); err != nil {
			errs = append(errs, errors.New("LOG_HASH_KEY_PREVIOUS: must be at least 32 bytes"))
		}
	}
	if strings.TrimSpace(b.TasksLocation) == "" {
		errs = append(errs, errors.New("TASKS_LOCATION: must not be empty"))
	}
	return errors.Join(errs...)
}

// Keyer returns the keyer of the ids derived from people (keyedid): keyed with LOG_HASH_KEY, and
// knowing LOG_HASH_KEY_PREVIOUS during a rotation.
func (b *Base) Keyer() *keyedid.Keyer {
	k := keyedid.New(b.Hasher())
	if b.LogHashKeyPrevious != "" {
		if prev, err := logging.NewHasher(b.LogHashKeyPrevious); err == nil {
			k = k.WithPrevious(keyedid.New(prev))
		}
	}
	return k
}

// InboundDatabase is the Firestore database of the webhook's markers and out-of-band payloads:
// INBOUND_FIRESTORE_DATABASE, else FIRESTORE_DATABASE.
func (b *Base) InboundDatabase() string {
	if b.InboundFirestoreDatabase != "" {
		return b.InboundFirestoreDatabase
	}
	return b.FirestoreDatabase
}

// IsDev reports whether the service runs in the dev environment.
func (b *Base) IsDev() bool { return b.AppEnv == EnvDev }

// CheckHTTPURL returns an error naming the variable name when raw is not an absolute http(s)
// URL, or nil.
func CheckHTTPURL(name, raw string) error {
	_, err := parseHTTPURL(name, raw)
	return err
}

func parseHTTPURL(name, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New(name + ": must be an absolute http(s) URL")
	}
	return u, nil
}

// CheckServiceURL returns an error naming the variable name when raw is not the URL of a service
// wapipe calls: an absolute http(s) URL, https unless APP_ENV is dev (plain http carries tokens
// in the clear). Every service variable holding a URL is checked here, so they all say the same.
func (b *Base) CheckServiceURL(name, raw string) error {
	u, err := parseHTTPURL(name, raw)
	if err != nil {
		return err
	}
	if u.Scheme != "https" && !b.IsDev() {
		return fmt.Errorf("%s: must be https when APP_ENV is %s", name, b.AppEnv)
	}
	return nil
}

// WorkerURL joins the worker's base URL and a route path.
func (b *Base) WorkerURL(path string) string {
	return strings.TrimRight(b.InternalTaskBaseURL, "/") + path
}

// Logger returns the service's JSON logger in Cloud Logging's format, at LOG_LEVEL (which Validate
// has checked).
func (b *Base) Logger() *slog.Logger {
	level, _ := logging.Level(b.LogLevel)
	return logging.New(os.Stdout, logging.Options{Level: level, ProjectID: b.ProjectID, Hasher: b.Hasher()})
}

// Hasher returns the keyed hasher of LOG_HASH_KEY (which Validate has checked): what logs and
// stored lookups (outbound records' to_hash, statuses' recipient_hash, event_ref) use.
func (b *Base) Hasher() *logging.Hasher {
	h, err := logging.HasherFromEnv(b.LogHashKey, b.AppEnv)
	if err != nil {
		// Validate refuses this configuration; a Base built without it still never logs an id.
		return nil
	}
	return h
}

// Telemetry returns the tracing options of the named service.
func (b *Base) Telemetry(service string, logger *slog.Logger) telemetry.Options {
	ratio := b.TraceSampleRatio
	return telemetry.Options{
		ServiceName: service,
		ProjectID:   b.ProjectID,
		Exporter:    b.TraceExporter,
		Dev:         b.IsDev(),
		SampleRatio: &ratio,
		Logger:      logger,
	}
}

// TaskQueue returns the settings of the task producer: where tasks go and how they authenticate
// to the worker.
func (b *Base) TaskQueue() taskqueue.Config {
	return taskqueue.Config{
		ProjectID:           b.ProjectID,
		Location:            b.TasksLocation,
		EmulatorHost:        b.TasksEmulatorHost,
		BaseURL:             b.InternalTaskBaseURL,
		Token:               b.InternalTaskToken,
		ServiceAccountEmail: b.TasksServiceAccountEmail,
	}
}

// Validator is a configuration that checks itself after loading.
type Validator interface{ Validate() error }

// Defaulter is a configuration with defaults that depend on other values (so that env tags cannot
// say them); Load applies them before validating.
type Defaulter interface{ SetDefaults() }

// Load fills cfg from l (the process environment when nil), applies its defaults and validates it.
// Errors name the variable, never a secret's value.
func Load(ctx context.Context, l envconfig.Lookuper, cfg Validator) error {
	if l == nil {
		l = envconfig.OsLookuper()
	}
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: cfg, Lookuper: l}); err != nil {
		return fmt.Errorf("configuration: %s", nameVariable(cfg, err.Error()))
	}
	if d, ok := cfg.(Defaulter); ok {
		d.SetDefaults()
	}
	err := cfg.Validate()
	if appEnv(cfg) != EnvDev {
		err = errors.Join(err, placeholders(reflect.ValueOf(cfg)))
	}
	if err != nil {
		// One line, whatever the number of problems.
		return fmt.Errorf("configuration: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// PlaceholderPrefix begins the values Terraform gives a secret before an operator adds the real
// one (terraform/secrets.tf): outside dev such a value stops the service at start-up, so a
// forgotten secret cannot run in production as a publicly known string.
const PlaceholderPrefix = "placeholder"

// appEnv is the APP_ENV of a configuration that embeds Base ("" when it has none, which counts as
// outside dev).
func appEnv(cfg any) string {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	if f := v.FieldByName("AppEnv"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return ""
}

// placeholders reports every string variable of cfg (nested and embedded structs included) whose
// value begins with PlaceholderPrefix, by variable name and never with the value. Every variable
// is checked, not a list of secrets, so that a secret added later is covered without anyone
// remembering to list it.
func placeholders(v reflect.Value) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var errs []error
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("env"), ",")
		switch {
		case f.Kind() == reflect.String && name != "":
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(f.String())), PlaceholderPrefix) {
				errs = append(errs, fmt.Errorf("%s: still holds a placeholder value; set the real one (gcloud secrets versions add) and redeploy", name))
			}
		case f.Kind() == reflect.Struct || f.Kind() == reflect.Pointer:
			errs = append(errs, placeholders(f))
		}
	}
	return errors.Join(errs...)
}

// nameVariable rewrites go-envconfig's "Field: Nested: problem" into "ENV_NAME: problem", so the
// line names the variable the operator sets, not a Go field path.
func nameVariable(cfg any, msg string) string {
	t := reflect.TypeOf(cfg)
	rest := msg
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		field, after, ok := strings.Cut(rest, ": ")
		if !ok || t.Kind() != reflect.Struct {
			return msg
		}
		f, found := t.FieldByName(field)
		if !found {
			return msg
		}
		if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
			after, _, _ = strings.Cut(after, ": "+name) // "missing required value: NAME"
			return name + ": " + after
		}
		t, rest = f.Type, after
	}
}
