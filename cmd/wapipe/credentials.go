package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
)

// credentials are the tenant credential operations, with the release of parked sends through
// the worker's tasks (INTERNAL_TASK_BASE_URL, INTERNAL_TASK_TOKEN) when any are parked.
func credentials(ctx context.Context, ops *operator.Tenants, db *store.DB, c connFlags) *operator.Credentials {
	tenants := store.NewTenants(db, store.Options{})
	sends := store.NewSends(db, store.Options{})
	return &operator.Credentials{
		Tenants: ops, Keys: store.NewAPIKeys(db, store.Options{}), Secrets: tenants, Keyer: db.Keyer(),
		Release: func(ctx context.Context, id string) (int, error) {
			n, err := sends.CountParked(ctx, id)
			if err != nil || n == 0 {
				return 0, err
			}
			baseURL, token := os.Getenv("INTERNAL_TASK_BASE_URL"), os.Getenv("INTERNAL_TASK_TOKEN")
			if baseURL == "" || token == "" {
				return 0, fmt.Errorf("%d send(s) are parked: set INTERNAL_TASK_BASE_URL and INTERNAL_TASK_TOKEN (the worker's) to release them", n)
			}
			tq, err := taskqueue.New(ctx, taskqueue.Config{ProjectID: c.conn.Project, Location: c.conn.Location,
				EmulatorHost: c.conn.TasksEmulatorHost, BaseURL: baseURL, Token: token,
				ServiceAccountEmail: os.Getenv("TASKS_SERVICE_ACCOUNT_EMAIL")})
			if err != nil {
				return 0, fmt.Errorf("taskqueue.New: %w", err)
			}
			defer tq.Close()
			return outbox.ReleaseParked(ctx, sends, tq, id, "wapipe-set-token")
		},
	}
}

// tenantsCredential runs api-key (expiring after ttl unless 0), connect-link and action-secret:
// the value is printed alone on the last line of stdout, the explanation goes to stderr.
func tenantsCredential(ctx context.Context, verb, id string, ops *operator.Tenants, db *store.DB, c connFlags, kmsKey, publicURL string, ttl time.Duration, stdout, stderr io.Writer) error {
	creds := credentials(ctx, ops, db, c)
	if verb != "api-key" {
		// A connect link's state is sealed under its own key (the api opens it), a tenant
		// secret under KMS_KEY_NAME; each verb opens only the key it uses.
		dev := os.Getenv("APP_ENV") == "dev"
		tenantKey := &secrets.Config{KMSKeyName: kmsKey, Dev: dev}
		var stateKey *secrets.Config
		if verb == "connect-link" {
			tenantKey, stateKey = nil, &secrets.Config{KMSKeyName: os.Getenv("CONNECT_STATE_KMS_KEY_NAME"), Dev: dev, Variable: "CONNECT_STATE_KMS_KEY_NAME"}
		}
		keeper, err := secrets.NewSplit(ctx, tenantKey, stateKey)
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		defer keeper.Close()
		ops.Sealer = keeper
	}
	switch verb {
	case "api-key":
		key, err := creds.APIKeyExpiring(ctx, id, ttl)
		if err != nil {
			return err
		}
		if ttl > 0 {
			fmt.Fprintf(stderr, "expires %s\n", stamp(time.Now().Add(ttl)))
		}
		fmt.Fprintf(stderr, "API key for %s (shown once; only its hash is stored). Send it as Authorization: Bearer <key>:\n", id)
		fmt.Fprintln(stdout, key)
	case "connect-link":
		if publicURL == "" {
			return usageErrorf("connect-link needs the api service's URL: set PUBLIC_BASE_URL or --public-url")
		}
		creds.PublicBaseURL = publicURL
		link, exp, err := creds.ConnectLink(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Embedded Signup link for %s, valid once until %s. Give it to the tenant's admin:\n", id, stamp(exp))
		fmt.Fprintln(stdout, link)
	case "action-secret":
		secret, err := creds.ActionSecret(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "action signing secret for %s (shown once; the previous one no longer signs). Verify X-Wapipe-Signature-256 with it:\n", id)
		fmt.Fprintln(stdout, secret)
	default:
		return errors.New("unknown credential command " + verb)
	}
	return nil
}
