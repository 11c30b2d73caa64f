// Package workerclient calls the worker's tenant routes (/internal/tenants/{tenant_id}/…, package
// tenantcalls): the Graph calls that need a tenant's access token, which only the worker's
// service account can decrypt. The api (media uploads, templates) and the console (a message's
// image) ask the worker instead of holding tokens themselves, so a compromise of either public or
// operator service does not hand over every tenant's token.
//
// It is a typed client of the routes' contract, package tenantroutes: each method sends its
// route's request and returns the route's answer, or a *refusal.Error carrying the status
// and code of a refusal. Any other error means no usable answer.
//
// Each request carries X-Internal-Token and, in production, a Google ID token for the worker's
// URL minted from the service's own account: Cloud Run's IAM check lets the api's and the
// console's accounts invoke the worker, and the worker admits them on their routes only
// (ROUTE_CALLERS).
package workerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/api/idtoken"

	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/tasks"
	"github.com/wapipe/wapipe/tenantroutes"
)

// maxAnswer caps what is read of an answer: a listing of Meta's largest accounts.
const maxAnswer = 8 << 20

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

// ListTemplates lists the tenant's templates at Meta (tenantroutes.ListTemplates).
func (c *Client) ListTemplates(ctx context.Context, tenantID string) ([]tenantroutes.Template, error) {
	var got tenantroutes.TemplateList
	err := c.call(ctx, tenantroutes.ListTemplates.Method, tenantroutes.Path(tenantID, "templates"), nil, nil, http.StatusOK, &got)
	return got.Data, err
}

// CreateTemplate creates a template from body, Meta's creation body with waba_id naming the
// account when the tenant has several (tenantroutes.CreateTemplate).
func (c *Client) CreateTemplate(ctx context.Context, tenantID string, body json.RawMessage) (tenantroutes.CreatedTemplate, error) {
	var got tenantroutes.CreatedTemplate
	h := http.Header{"Content-Type": {"application/json"}}
	err := c.call(ctx, tenantroutes.CreateTemplate.Method, tenantroutes.Path(tenantID, "templates"), bytes.NewReader(body), h, http.StatusCreated, &got)
	return got, err
}

// DeleteTemplate deletes template name in every language, from account wabaID when the tenant
// has several ("" otherwise) (tenantroutes.DeleteTemplate).
func (c *Client) DeleteTemplate(ctx context.Context, tenantID, name, wabaID string) error {
	path := tenantroutes.Path(tenantID, "templates", name)
	if wabaID != "" {
		path += "?" + url.Values{tenantroutes.QueryWABAID: {wabaID}}.Encode()
	}
	var got tenantroutes.Deleted
	return c.call(ctx, tenantroutes.DeleteTemplate.Method, path, nil, nil, http.StatusOK, &got)
}

// Upload streams file to Graph's upload as u names it, and returns what Meta took
// (tenantroutes.Upload). The worker may answer before file is read to its end (a refusal): the
// upload then returns without reading the rest.
func (c *Client) Upload(ctx context.Context, tenantID string, u tenantroutes.UploadRequest, file io.Reader) (tenantroutes.Uploaded, error) {
	var got tenantroutes.Uploaded
	path := tenantroutes.Path(tenantID, "media") + "?" + u.Query().Encode()
	if err := c.call(ctx, tenantroutes.Upload.Method, path, file, u.Header(), http.StatusCreated, &got); err != nil {
		return tenantroutes.Uploaded{}, err
	}
	if got.ID == "" {
		return tenantroutes.Uploaded{}, errors.New("workerclient: the worker's upload answer has no media id")
	}
	return got, nil
}

// Media is a file the worker streams: its type, its length (-1 when not known) and its bytes,
// which the caller reads and closes.
type Media struct {
	ContentType   string
	ContentLength int64
	Body          io.ReadCloser
}

// CopyMedia streams the file of mediaID, fetched from Graph with the tenant's token
// (tenantroutes.MediaCopy). The caller closes the Media's Body.
func (c *Client) CopyMedia(ctx context.Context, tenantID, mediaID string) (Media, error) {
	resp, err := c.do(ctx, tenantroutes.MediaCopy.Method, tenantroutes.Path(tenantID, "media", mediaID), nil, nil)
	if err != nil {
		return Media{}, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		// The status is the answer: a body that breaks off only loses the refusal's words.
		refused, _ := refusalOf(resp)
		return Media{}, refused
	}
	return Media{ContentType: resp.Header.Get("Content-Type"), ContentLength: resp.ContentLength, Body: resp.Body}, nil
}

// call sends one request and decodes its answer into out when its status is want; any other
// status is the route's refusal (*refusal.Error).
func (c *Client) call(ctx context.Context, method, path string, body io.Reader, h http.Header, want int, out any) error {
	resp, err := c.do(ctx, method, path, body, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		refused, err := refusalOf(resp)
		if err != nil {
			return err
		}
		return refused
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("workerclient: read the worker's answer: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("workerclient: decode the worker's answer: %w", err)
	}
	return nil
}

// refusalOf is the *refusal.Error of an answer other than the route's success: its status, and
// the code and message of its body (empty when the body is not a refusal); err says the body
// could not be read.
func refusalOf(resp *http.Response) (*refusal.Error, error) {
	var body struct {
		Error refusal.Error `json:"error"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err == nil {
		_ = json.Unmarshal(data, &body)
	}
	body.Error.Status = resp.StatusCode
	if err != nil {
		return &body.Error, fmt.Errorf("workerclient: read the worker's answer: %w", err)
	}
	return &body.Error, nil
}

// do sends method path (from tenantroutes.Path, with an optional ?query) with body and header to
// the worker and returns its response, whatever its status. An error means no answer.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
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
