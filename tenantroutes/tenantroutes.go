// Package tenantroutes is the contract of the worker's tenant routes
// (/internal/tenants/{tenant_id}/…), beside tasks/, the contract of its task routes: the routes'
// paths, the query and header that name an upload, the JSON bodies, and the refusals they
// answer with. The routes (internal/tenantcalls) answer with these types and the client
// (internal/workerclient) reads them, so neither side spells a path, a field or a code of its
// own and the two cannot drift apart.
//
// A route's refusal is a *refusal.Error answered with its status, in the body refusal.Body
// ({"error":{"code","message"}}, as the api answers), under the codes package refusal holds for
// the api and the outbox too, so a caller can pass a refusal on as it is. The codes the routes
// answer with, and their statuses:
//
//   - refusal.InvalidRequest (400): the request, or Meta's refusal of it (Meta's words).
//   - refusal.NotFound (404): no such tenant.
//   - refusal.Forbidden (403): a template of an account shared with other tenants that this
//     tenant did not create.
//   - refusal.TemplateNameTaken (409): a template name another tenant created on the account
//     shared with it.
//   - refusal.NoToken (409): the tenant has no usable access token.
//   - refusal.ReauthRequired (409): Meta refused the tenant's token, which must be renewed.
//   - refusal.MediaTooLarge (413): a file over its limit.
//   - refusal.MediaGone (404): Meta no longer has the file.
//   - refusal.UnsupportedMediaType (415): WhatsApp takes no file of this type.
//   - refusal.WhatsAppRefused (502): WhatsApp refused the file.
//   - refusal.Unavailable (503): the worker failed; the caller may try again.
//
// A client returns a *refusal.Error carrying the answer's status for any answer other than the
// route's success, with Code and Message empty when the body was not a refusal.
//
// Who may call each route is not here: that is the worker's door, tasks.Routes.
package tenantroutes

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/wapipe/wapipe/tasks"
)

// Prefix is where the worker mounts the tenant routes; each Route's pattern is under it.
const Prefix = tasks.TenantRoutePrefix

// Route is one tenant route: its method and its pattern under Prefix ({name}: one segment).
type Route struct {
	Method, Pattern string
}

// The tenant routes.
var (
	// MediaCopy streams a message's file from Graph, never stored: the console's view of an
	// image. 200 with the file, its type and the headers of a contact's file.
	MediaCopy = Route{http.MethodGet, "/media/{media_id}"}
	// Upload streams the body, the file, into Graph's upload (UploadRequest names it): 201
	// Uploaded.
	Upload = Route{http.MethodPost, "/media"}
	// ListTemplates lists the tenant's templates at Meta, recorded: 200 TemplateList.
	ListTemplates = Route{http.MethodGet, "/templates"}
	// CreateTemplate takes Meta's creation body, with waba_id naming the account when the
	// tenant's numbers are in several: 201 CreatedTemplate.
	CreateTemplate = Route{http.MethodPost, "/templates"}
	// DeleteTemplate deletes a template in every language (?waba_id=… as above): 200 Deleted.
	DeleteTemplate = Route{http.MethodDelete, "/templates/{name}"}
)

// Routes are the tenant routes.
func Routes() []Route {
	return []Route{MediaCopy, Upload, ListTemplates, CreateTemplate, DeleteTemplate}
}

// Path is the path of a tenant route: /internal/tenants/{tenantID} followed by elems, each
// escaped as one path segment, so a tenant id or a template name cannot step into another route.
func Path(tenantID string, elems ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(Prefix, "{tenant_id}"))
	b.WriteString(url.PathEscape(tenantID))
	for _, e := range elems {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(e))
	}
	return b.String()
}

// Query parameters of the routes.
const (
	// QueryPhoneNumberID and QueryMIMEType are an upload's number and file type.
	QueryPhoneNumberID = "phone_number_id"
	QueryMIMEType      = "mime_type"
	// QueryWABAID names the account of a template deletion (the creation body's waba_id).
	QueryWABAID = "waba_id"
)

// UploadRequest names an upload: the tenant's number, the file's type, and its name ("" for
// none). The name is message content: it goes in the Content-Disposition header, never in the
// URL, which Cloud Run's request logs keep.
type UploadRequest struct {
	PhoneNumberID, MIMEType, Filename string
}

// Query is the upload's query string.
func (u UploadRequest) Query() url.Values {
	return url.Values{QueryPhoneNumberID: {u.PhoneNumberID}, QueryMIMEType: {u.MIMEType}}
}

// Header is the upload's request header: the body is the file's bytes, named by
// Content-Disposition when the file has a name.
func (u UploadRequest) Header() http.Header {
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	if u.Filename != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": u.Filename}))
	}
	return h
}

// UploadRequestOf reads the upload r names (a name in the query is not read).
func UploadRequestOf(r *http.Request) UploadRequest {
	q := r.URL.Query()
	return UploadRequest{PhoneNumberID: q.Get(QueryPhoneNumberID), MIMEType: q.Get(QueryMIMEType), Filename: UploadFilename(r.Header)}
}

// UploadFilename is the file name an upload's header h gives, or "".
func UploadFilename(h http.Header) string {
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// The bodies of the answers. Each struct's fields are in the order the routes have always
// written them (a Go map's: by name), so an answer is the same bytes it always was.

// Uploaded answers an upload: Meta's media id, the file's MIME type, its size in bytes and its
// SHA-256, hex-encoded (as Meta's media lookup gives it).
type Uploaded struct {
	FileSize int64  `json:"file_size"`
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
}

// Template is one template of a listing; Components are Meta's, as they are (absent when Meta
// gave none).
type Template struct {
	ID         string          `json:"id,omitempty"`
	WABAID     string          `json:"waba_id,omitempty"`
	Name       string          `json:"name"`
	Language   string          `json:"language"`
	Status     string          `json:"status"`
	Category   string          `json:"category"`
	Components json.RawMessage `json:"components,omitempty"`
}

// TemplateList answers a listing: every template of every account of the tenant's numbers.
type TemplateList struct {
	Data []Template `json:"data"`
}

// CreatedTemplate answers a creation: Meta's id, status and category (Meta may change the
// category it was asked for).
type CreatedTemplate struct {
	Category string `json:"category"`
	ID       string `json:"id"`
	Status   string `json:"status"`
}

// Deleted answers a deletion.
type Deleted struct {
	Success bool `json:"success"`
}
