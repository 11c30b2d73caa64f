package config_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/console"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/worker"
)

// terraformPlaceholder is the value terraform/secrets.tf gives every secret's first version.
func terraformPlaceholder(variable string) string {
	return "placeholder-" + strings.ToLower(variable) + "-replace-with-gcloud-secrets-versions-add"
}

// service is one service's configuration, a valid production environment for it, and the
// secrets it reads (terraform/secrets.tf, local.secret_readers).
type service struct {
	name    string
	config  func() config.Validator
	env     map[string]string
	secrets []string
}

func services() []service {
	const key = "projects/p/locations/us-central1/keyRings/wapipe/cryptoKeys/"
	// Each service's tasks carry its own invoker (TASKS_SERVICE_ACCOUNT_EMAIL), as Terraform sets.
	with := func(extra map[string]string) map[string]string {
		env := baseEnv()
		maps.Copy(env, extra)
		return env
	}
	return []service{
		{"webhook", func() config.Validator { return &webhook.Config{} },
			with(map[string]string{"WHATSAPP_APP_SECRET": "app-secret-value-0123", "WHATSAPP_VERIFY_TOKEN": "verify-token-value-0123",
				"TASKS_SERVICE_ACCOUNT_EMAIL": invoker("webhook")}),
			[]string{"INTERNAL_TASK_TOKEN", "LOG_HASH_KEY", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"}},
		{"worker", func() config.Validator { return &worker.Config{} },
			with(map[string]string{"WHATSAPP_ACCESS_TOKEN": "EAAG-access-token-value", "KMS_KEY_NAME": key + "tenant-secrets",
				"TASKS_SERVICE_ACCOUNT_EMAIL": invoker("worker"), "ROUTE_CALLERS": routeCallers()}),
			[]string{"INTERNAL_TASK_TOKEN", "LOG_HASH_KEY", "WHATSAPP_ACCESS_TOKEN"}},
		{"api", func() config.Validator { return &api.Config{} },
			with(map[string]string{
				"KMS_KEY_NAME": key + "tenant-secrets", "CONNECT_STATE_KMS_KEY_NAME": key + "connect-states",
				"META_APP_ID": "100000000000001", "META_CONFIG_ID": "cfg", "PUBLIC_BASE_URL": "https://api.example",
				"WHATSAPP_APP_SECRET": "app-secret-value-0123", "TASKS_SERVICE_ACCOUNT_EMAIL": invoker("api"),
			}),
			[]string{"INTERNAL_TASK_TOKEN", "LOG_HASH_KEY", "WHATSAPP_APP_SECRET"}},
		{"console", func() config.Validator { return &console.Config{} },
			with(map[string]string{
				"PUBLIC_BASE_URL": "https://api.example", "CONNECT_STATE_KMS_KEY_NAME": key + "connect-states",
				"K_SERVICE": "wapipe-console", "OIDC_VERIFIED_BY_PLATFORM": "true",
				"TASKS_SERVICE_ACCOUNT_EMAIL": invoker("console"), "REPLAY_INVOKERS": replayInvokers(),
			}),
			[]string{"INTERNAL_TASK_TOKEN", "LOG_HASH_KEY"}},
	}
}

// checkRefusal fails unless err is one line naming variable and not showing value.
func checkRefusal(t *testing.T, err error, variable, value string) {
	t.Helper()
	switch {
	case err == nil:
		t.Fatalf("Load succeeded; want a refusal naming %s", variable)
	case !strings.Contains(err.Error(), variable+": "):
		t.Errorf("Load error = %q; want it to name %s", err, variable)
	case strings.Contains(err.Error(), "\n"):
		t.Errorf("Load error spans lines: %q", err)
	case strings.Contains(err.Error(), value):
		t.Errorf("Load error shows the value: %q", err)
	}
}

// TestServicesRefusePlaceholderSecrets (issue 21 item 7): outside dev, every service refuses to
// start with a secret still at Terraform's placeholder, in one line that names the variable and
// not the value.
func TestServicesRefusePlaceholderSecrets(t *testing.T) {
	t.Parallel()
	for _, svc := range services() {
		t.Run(svc.name+"/valid", func(t *testing.T) {
			t.Parallel()
			if err := config.Load(t.Context(), envconfig.MapLookuper(svc.env), svc.config()); err != nil {
				t.Fatalf("Load of a valid production environment: %v", err)
			}
		})
		for _, appEnv := range []string{config.EnvStaging, config.EnvProd} {
			for _, variable := range svc.secrets {
				for _, value := range []string{terraformPlaceholder(variable), "PLACEHOLDER"} {
					t.Run(svc.name+"/"+appEnv+"/"+variable+"/"+value, func(t *testing.T) {
						t.Parallel()
						env := maps.Clone(svc.env)
						env["APP_ENV"] = appEnv
						env[variable] = value
						checkRefusal(t, config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()), variable, value)
					})
				}
			}
		}
	}
}

// TestServicesRefuseDevLogHashKey (issue 21 item 7): the dev LOG_HASH_KEY is public, so outside
// dev it would make every ph_… and ref_… reversible: every service refuses it.
func TestServicesRefuseDevLogHashKey(t *testing.T) {
	t.Parallel()
	for _, svc := range services() {
		for _, appEnv := range []string{config.EnvStaging, config.EnvProd} {
			t.Run(svc.name+"/"+appEnv, func(t *testing.T) {
				t.Parallel()
				env := maps.Clone(svc.env)
				env["APP_ENV"] = appEnv
				env["LOG_HASH_KEY"] = logging.DevHashKey
				checkRefusal(t, config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()), "LOG_HASH_KEY", logging.DevHashKey)
			})
		}
	}
}

// TestDevStartsWithDefaults: dev needs no secret of its own (dev LOG_HASH_KEY, development KMS
// keys) and takes placeholder values as they are.
func TestDevStartsWithDefaults(t *testing.T) {
	t.Parallel()
	for _, svc := range services() {
		t.Run(svc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{
				"APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": "p", "TASKS_LOCATION": "us-central1",
				"INTERNAL_TASK_BASE_URL": "http://127.0.0.1:8081", "INTERNAL_TASK_TOKEN": "dev-token",
			}
			if svc.name == "webhook" {
				env["WHATSAPP_APP_SECRET"], env["WHATSAPP_VERIFY_TOKEN"] = "dev-secret", "dev-verify"
			}
			if err := config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()); err != nil {
				t.Fatalf("Load of dev defaults: %v", err)
			}
			for _, variable := range svc.secrets {
				env[variable] = terraformPlaceholder(variable)
			}
			env["LOG_HASH_KEY"] = logging.DevHashKey
			if err := config.Load(t.Context(), envconfig.MapLookuper(env), svc.config()); err != nil {
				t.Fatalf("Load of dev with placeholders: %v", err)
			}
		})
	}
}

// placeholderConfig has a nested struct and a pointer, as service configurations may.
type placeholderConfig struct {
	config.Base
	Meta struct {
		AppID string `env:"META_APP_ID"`
	}
	Extra *struct {
		Token string `env:"EXTRA_TOKEN"`
	}
}

func (c *placeholderConfig) Validate() error { return c.Base.Validate() }

// TestPlaceholderAnyVariable: every variable is checked, nested or embedded, not a list of
// secrets, and each placeholder is named.
func TestPlaceholderAnyVariable(t *testing.T) {
	t.Parallel()
	env := baseEnv()
	env["META_APP_ID"] = "placeholder-app-id"
	env["EXTRA_TOKEN"] = "  Placeholder"
	env["INTERNAL_TASK_TOKEN"] = "placeholder-internal_task_token-x"
	var cfg placeholderConfig
	err := config.Load(t.Context(), envconfig.MapLookuper(env), &cfg)
	for _, variable := range []string{"META_APP_ID", "EXTRA_TOKEN", "INTERNAL_TASK_TOKEN"} {
		checkRefusal(t, err, variable, env[variable])
	}
	// A value that only contains the word is not a placeholder.
	env = baseEnv()
	env["META_APP_ID"] = "app-placeholder"
	if err := config.Load(t.Context(), envconfig.MapLookuper(env), &placeholderConfig{}); err != nil {
		t.Errorf("Load: %v", err)
	}
}
