package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/signup"
	"github.com/wapipe/wapipe/tasks"
)

// DefaultFacebookDialogURL is Meta's OAuth dialog, where Embedded Signup starts.
const DefaultFacebookDialogURL = graph.DefaultDialogURL

// Config is the api service's configuration, read from the environment.
type Config struct {
	config.Base

	// GraphAPIBaseURL and FacebookDialogURL default (SetDefaults) to URLs built from
	// graph.Version, which an env tag cannot name.
	GraphAPIBaseURL string `env:"GRAPH_API_BASE_URL"`
	// KMSKeyName seals the tokens Embedded Signup stores (the api only encrypts with it);
	// required outside dev, where an unset value means the development key.
	KMSKeyName string `env:"KMS_KEY_NAME"`
	// ConnectStateKMSKeyName opens (and seals) connect links' states: a key of its own, so that
	// the public api's right to decrypt ends at states and never reaches tenant secrets.
	// Required outside dev, where an unset value means the development key.
	ConnectStateKMSKeyName string `env:"CONNECT_STATE_KMS_KEY_NAME"`
	// Embedded Signup: all of META_APP_ID, META_CONFIG_ID, PUBLIC_BASE_URL and
	// WHATSAPP_APP_SECRET (the code exchange's client secret), or none (the connect routes then
	// say it is not configured).
	MetaAppID         string `env:"META_APP_ID"`
	MetaConfigID      string `env:"META_CONFIG_ID"`
	PublicBaseURL     string `env:"PUBLIC_BASE_URL"`
	AppSecret         string `env:"WHATSAPP_APP_SECRET"`
	FacebookDialogURL string `env:"FACEBOOK_DIALOG_URL"`
	// Rate limits, per instance: requests a second and burst per client address, counting only
	// requests without a valid API key (an address over it is refused before its next key
	// lookup, so guessed keys cost no read past it), and per API key (after authentication;
	// a tenant's file may set its own, limits.api). 0 means the default.
	AddressRate  float64 `env:"API_RATE_PER_ADDRESS, default=20"`
	AddressBurst int     `env:"API_BURST_PER_ADDRESS, default=40"`
	KeyRate      float64 `env:"API_RATE_PER_KEY, default=50"`
	KeyBurst     int     `env:"API_BURST_PER_KEY, default=1000"`
}

// Defaults of the rate limits: a business's server may post a campaign of 1,000 sends at once
// (its send queue paces them to Meta afterwards) and then 50 a second (Meta's own default
// throughput per number is 80); one address may not cost more than 20 failed key lookups a
// second.
const (
	DefaultAddressRate  = 20
	DefaultAddressBurst = 40
	DefaultKeyRate      = 50
	DefaultKeyBurst     = 1000
)

// SetDefaults fills the Graph API URLs left empty and the rate limits a config built by hand
// leaves at 0.
func (c *Config) SetDefaults() {
	if c.GraphAPIBaseURL == "" {
		c.GraphAPIBaseURL = graph.DefaultBaseURL
	}
	if c.FacebookDialogURL == "" {
		c.FacebookDialogURL = DefaultFacebookDialogURL
	}
	if c.AddressRate == 0 {
		c.AddressRate = DefaultAddressRate
	}
	if c.AddressBurst == 0 {
		c.AddressBurst = DefaultAddressBurst
	}
	if c.KeyRate == 0 {
		c.KeyRate = DefaultKeyRate
	}
	if c.KeyBurst == 0 {
		c.KeyBurst = DefaultKeyBurst
	}
}

// Validate checks the api's values on top of the shared ones.
func (c *Config) Validate() error {
	errs := []error{c.Base.Validate()}
	checkURL := func(name, v string, required bool) {
		if v == "" && !required {
			return
		}
		if err := c.CheckServiceURL(name, v); err != nil {
			errs = append(errs, err)
		}
	}
	checkURL("GRAPH_API_BASE_URL", c.GraphAPIBaseURL, true)
	checkURL("FACEBOOK_DIALOG_URL", c.FacebookDialogURL, true)
	checkURL("PUBLIC_BASE_URL", c.PublicBaseURL, false)
	if c.SignupEnabled() || c.MetaConfigID != "" {
		for _, v := range []struct{ name, value string }{
			{"META_APP_ID", c.MetaAppID}, {"META_CONFIG_ID", c.MetaConfigID},
			{"PUBLIC_BASE_URL", c.PublicBaseURL}, {"WHATSAPP_APP_SECRET", c.AppSecret},
		} {
			if v.value == "" {
				errs = append(errs, errors.New(v.name+": required for Embedded Signup (META_APP_ID is set)"))
			}
		}
	}
	for _, v := range []struct {
		name  string
		value float64
	}{
		{"API_RATE_PER_ADDRESS", c.AddressRate}, {"API_BURST_PER_ADDRESS", float64(c.AddressBurst)},
		{"API_RATE_PER_KEY", c.KeyRate}, {"API_BURST_PER_KEY", float64(c.KeyBurst)},
	} {
		if v.value < 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive (0 for the default), got %v", v.name, v.value))
		}
	}
	if err := c.Secrets().Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.StateSecrets().Validate(); err != nil {
		errs = append(errs, err)
	}
	// Its sends (process_send) carry its own invoker's token.
	errs = append(errs, tasks.CheckInvoker(c.TasksServiceAccountEmail, c.IsDev()))
	return errors.Join(errs...)
}

// SignupEnabled reports whether Embedded Signup is configured.
func (c *Config) SignupEnabled() bool { return c.Signup().Enabled() }

// Signup is the configuration of Embedded Signup (internal/signup).
func (c *Config) Signup() signup.Config {
	return signup.Config{AppID: c.MetaAppID, ConfigID: c.MetaConfigID, AppSecret: c.AppSecret,
		PublicBaseURL: c.PublicBaseURL, DialogURL: c.FacebookDialogURL, TrustProxy: !c.IsDev()}
}

// Secrets is the configuration of the keeper that seals the tokens Embedded Signup brings.
func (c *Config) Secrets() secrets.Config {
	return secrets.Config{KMSKeyName: c.KMSKeyName, Dev: c.IsDev()}
}

// StateSecrets is the configuration of the keeper that opens connect links' states.
func (c *Config) StateSecrets() secrets.Config {
	return secrets.Config{KMSKeyName: c.ConnectStateKMSKeyName, Dev: c.IsDev(), Variable: "CONNECT_STATE_KMS_KEY_NAME"}
}

// OpenKeeper opens the api's keeper: tenant secrets under KMS_KEY_NAME, connect states under
// CONNECT_STATE_KMS_KEY_NAME (secrets.Split). The caller closes it.
func (c *Config) OpenKeeper(ctx context.Context) (*secrets.Keeper, error) {
	tenant, state := c.Secrets(), c.StateSecrets()
	k, err := secrets.NewSplit(ctx, &tenant, &state)
	if err != nil {
		return nil, fmt.Errorf("secrets.NewSplit: %w", err)
	}
	return k, nil
}
