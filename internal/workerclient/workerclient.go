// Package workerclient calls the worker's tenant routes (/internal/tenants/{tenant_id}/…): the
// Graph calls that need a tenant's access token, which only the worker's service account can
// decrypt. The api (media uploads, templates) and the console (a message's image) ask the
// worker instead of holding tokens themselves, so a compromise of either public or operator
// service does not hand over every tenant's token.
//
// Each request carries X-Internal-Token and, in production, a Google ID token for the worker's
// URL minted from the service's own account: Cloud Run's IAM check lets the api's and the
// console's accounts invoke the worker, and the worker admits only the accounts listed in its
// INTERNAL_CALLERS.
package workerclient

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/api/idtoken"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
)

// Client calls the worker's tenant routes. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client of the worker at cfg.InternalTaskBaseURL. Where tasks carry ID tokens
// (TASKS_SERVICE_ACCOUNT_EMAIL set: production), requests carry one too, for the worker's URL,
// from the service's own credentials; elsewhere (dev, tests) they carry the internal token only.
func New(ctx context.Context, cfg config.Base) (*Client, error) {
	hc := &http.Client{}
	if cfg.TasksServiceAccountEmail != "" {
		var err error
		hc, err = idtoken.NewClient(ctx, taskqueue.Audience(cfg.InternalTaskBaseURL))
		if err != nil {
			return nil, fmt.Errorf("workerclient: ID token client for %s: %w", cfg.InternalTaskBaseURL, err)
		}
	}
	return NewWithHTTPClient(cfg.InternalTaskBaseURL, cfg.InternalTaskToken, hc), nil
}

// NewWithHTTPClient returns a client of the worker at baseURL through hc, which adds whatever
// identity the worker needs beside the internal token.
func NewWithHTTPClient(baseURL, internalToken string, hc *http.Client) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), token: internalToken, http: hc}
}

// Path is the path of a tenant route: /internal/tenants/{tenantID} followed by elems, each
// escaped as one path segment.
func Path(tenantID string, elems ...string) string {
	var b strings.Builder
	b.WriteString("/internal/tenants/")
	b.WriteString(url.PathEscape(tenantID))
	for _, e := range elems {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(e))
	}
	return b.String()
}

// Do sends method path (from Path, with an optional ?query) with body and header to the
// worker and returns its response, whatever its status: the caller reads the body (a tenant
// route's refusal is {"error":{"code","message"}}) and closes it. An error means no answer.
func (c *Client) Do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("workerclient: build %s request: %w", method, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set(tasks.HeaderInternalToken, c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("workerclient: %s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	return resp, nil
}

// UploadDisposition is the Content-Disposition header that names a file to the worker's upload
// route ("" for no name). The name is message content: it goes in a header, never in the URL,
// which Cloud Run's request logs keep.
func UploadDisposition(filename string) string {
	if filename == "" {
		return ""
	}
	return mime.FormatMediaType("attachment", map[string]string{"filename": filename})
}

// UploadFilename is the file name UploadDisposition put in h, or "".
func UploadFilename(h http.Header) string {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}
