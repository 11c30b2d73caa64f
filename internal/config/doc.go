// Package config is the configuration both services read from the environment at start-up (Base,
// which each service's Config embeds), its loading with defaults, and its validation. Clients are
// built by the packages that own them (store, taskqueue) from these values.
package config
