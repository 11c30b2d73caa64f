package page

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

// Pages are the parsed templates: each page is the layout plus its own file, so each defines
// its own "content" block.
type Pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"requestID": NewRequestID,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return HumanDuration(now.Sub(t)) + " ago"
	},
	"secs": func(s float64) string { return HumanDuration(time.Duration(s * float64(time.Second))) },
	"ms":   func(ms float64) string { return fmt.Sprintf("%.0f ms", ms) },
	"pct":  func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"join": strings.Join,
	// rfc3339 is a time for <time datetime>, which console.js shows in the reader's zone.
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// pair passes two values to a template: the page's view and a part of it.
	"pair": func(a, b any) pairOf { return pairOf{a, b} },
}

// pairOf is what pair makes.
type pairOf struct{ A, B any }

// MustParse parses the pages of fsys's templates/ (the console embeds them): layout.html and
// partials.html go with every other file. It panics when one does not parse, which the
// console's tests rule out.
func MustParse(fsys fs.FS) *Pages {
	p := &Pages{byName: map[string]*template.Template{}}
	files, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(fsys, "templates/layout.html", "templates/partials.html", f))
		p.byName[name] = t
	}
	return p
}

// View is what every page template gets.
type View struct {
	Title    string
	Nav      string
	Operator string
	CSRF     string
	Now      time.Time
	// Flash is the outcome of the action the page was redirected from (?req=…).
	Flash *store.AuditEntry
	Data  any
}

// Kit is what every room of the console renders and acts with: the pages, the audit log that
// makes each action run once, and the clock.
type Kit struct {
	Pages *Pages
	Audit AuditLog
	Now   func() time.Time
}

// headers protect every page (httpserver.SetSecurityHeaders): never cached, never framed, no
// referrer, and nothing loaded from anywhere but the console itself.
var headers = httpserver.Browser{
	CSP:   "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'",
	Cache: "no-store", Page: true,
}

// Render executes a page (or, with block set, one of its blocks: an htmx fragment) into a buffer
// first, so a failure never sends half a page.
func (k *Kit) Render(w http.ResponseWriter, r *http.Request, status int, name, block string, v View) {
	t := k.Pages.byName[name]
	if t == nil {
		k.RenderError(w, r, http.StatusInternalServerError, "Internal error.")
		return
	}
	v.Operator, v.CSRF, v.Now = OperatorFrom(r.Context()), CSRFToken(r.Context()), k.Now()
	if block == "" {
		block = "layout"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, v); err != nil {
		Logger(r.Context()).Error("render page", "event", "console_render_failed", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	httpserver.SetSecurityHeaders(w.Header(), headers)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// RenderError renders the error page with a message meant for operators.
func (k *Kit) RenderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	k.Render(w, r, status, "error", "", View{Title: http.StatusText(status), Data: msg})
}

// Fail logs err and renders what an operator may read of it.
func (k *Kit) Fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, store.ErrBadPageToken):
		status = http.StatusBadRequest
	}
	if status == http.StatusInternalServerError {
		Logger(r.Context()).Error(what+" failed", "event", "console_page_failed", "path", r.URL.Path, "error", err)
	}
	k.RenderError(w, r, status, what+": "+UserMessage(err))
}

// Logger returns the request's logger (the console's middleware puts it in the context, naming
// the operator).
func Logger(ctx context.Context) *slog.Logger { return logging.FromContext(ctx) }

// ErrNotAvailable is what a feature answers when its dependency is not wired in this deployment.
var ErrNotAvailable = errors.New("not available")

// UserMessage is what an operator reads of an error: the known kinds by name, others as a
// generic line (the details are in the logs, never on the page).
func UserMessage(err error) string {
	var um interface{ UserMessage() string }
	switch {
	case err == nil:
		return ""
	case errors.As(err, &um):
		return um.UserMessage()
	case errors.Is(err, ErrNotAvailable):
		return "not available in this deployment yet"
	case errors.Is(err, operator.ErrNothingFound):
		return "nothing found"
	case errors.Is(err, store.ErrNotFound):
		return "not found"
	case errors.Is(err, store.ErrBadPageToken):
		return "bad page link"
	default:
		return "internal error (details in the console's logs)"
	}
}

// HumanDuration rounds d for people: 45s, 3m10s, 2h5m.
func HumanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
}
