package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

//go:embed static
var staticFS embed.FS

//go:embed templates
var templateFS embed.FS

// pages are the parsed templates: each page is the layout plus its own file, so each defines
// its own "content" block.
type pages struct {
	byName map[string]*template.Template
}

var funcs = template.FuncMap{
	"requestID": newRequestID,
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
		return humanDuration(now.Sub(t)) + " ago"
	},
	"secs": func(s float64) string { return humanDuration(time.Duration(s * float64(time.Second))) },
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

func mustParsePages() *pages {
	p := &pages{byName: map[string]*template.Template{}}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", f))
		p.byName[name] = t
	}
	return p
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	Operator string
	CSRF     string
	Now      time.Time
	// Flash is the outcome of the action the page was redirected from (?req=…).
	Flash *store.AuditEntry
	Data  any
}

// render executes a page (or, with block set, one of its blocks: an htmx fragment) into a buffer
// first, so a failure never sends half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, block string, v view) {
	t := s.pages.byName[name]
	if t == nil {
		s.renderError(w, r, http.StatusInternalServerError, "Internal error.")
		return
	}
	v.Operator, v.CSRF, v.Now = OperatorFrom(r.Context()), csrfToken(r.Context()), s.deps.Now()
	if block == "" {
		block = "layout"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, block, v); err != nil {
		s.logger(r.Context()).Error("render page", "event", "console_render_failed", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderError renders the error page with a message meant for operators.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", "", view{Title: http.StatusText(status), Data: msg})
}

// fail logs err and renders what an operator may read of it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, store.ErrBadPageToken):
		status = http.StatusBadRequest
	}
	if status == http.StatusInternalServerError {
		s.logger(r.Context()).Error(what+" failed", "event", "console_page_failed", "path", r.URL.Path, "error", err)
	}
	s.renderError(w, r, status, what+": "+userMessage(err))
}

// userMessage is what an operator reads of an error: the known kinds by name, others as a
// generic line (the details are in the logs, never on the page).
func userMessage(err error) string {
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

// humanDuration rounds d for people: 45s, 3m10s, 2h5m.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
}
