package tenantcalls

import (
	"fmt"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/media"
	"github.com/wapipe/wapipe/internal/store"
)

// Config is what the tenant routes read of the configuration of the worker that mounts them.
type Config struct {
	// GraphAPIBaseURL is the Graph API's base URL (GRAPH_API_BASE_URL).
	GraphAPIBaseURL string
	// MediaMaxBytes caps a file the console's copy streams (MEDIA_MAX_BYTES).
	MediaMaxBytes int64
	// Dev accepts a download URL that is not https: the fake Graph API's, in dev only.
	Dev bool
}

// NewDeps builds the tenant routes' dependencies. tenants, tokens and sends are the worker's own
// (its per-instance tenant and token caches, its parked sends): a token Graph refuses on a tenant
// route is then refused for the worker's sends at once, as a refused send's is, and opened tokens
// are cached once per instance.
func NewDeps(cfg Config, db *store.DB, tenants delivery.Tenants, tokens delivery.Tokens, sends delivery.Parker) (Deps, error) {
	httpClient := &http.Client{Timeout: graph.DefaultTimeout, Transport: otelhttp.NewTransport(http.DefaultTransport)}
	// The client has no token of its own: every call carries its tenant's.
	gc, err := graph.NewClient(cfg.GraphAPIBaseURL, "", httpClient)
	if err != nil {
		return Deps{}, fmt.Errorf("graph.NewClient: %w", err)
	}
	// A copy streams the file through and charges no media budget: the smallest one will do.
	mf, err := media.New(gc, media.Config{MaxBytes: cfg.MediaMaxBytes, AllowInsecureURL: cfg.Dev, InflightBytes: media.Footprint * cfg.MediaMaxBytes})
	if err != nil {
		return Deps{}, fmt.Errorf("media.New: %w", err)
	}
	uploads, err := GraphUploader(cfg.GraphAPIBaseURL, otelhttp.NewTransport(http.DefaultTransport))
	if err != nil {
		return Deps{}, err
	}
	// The deliverer's token opening and refusal marking, on the worker's caches: it sends nothing.
	d := &delivery.Deliverer{Tenants: tenants, Tokens: tokens, Sends: sends}
	return Deps{
		Tokens:      d,
		Refusals:    d,
		Templates:   store.NewTemplates(db, store.Options{}),
		TemplateAPI: GraphTemplates{Client: gc},
		Uploads:     uploads,
		MediaFiles:  mf,
	}, nil
}
