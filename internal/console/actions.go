package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// AuditLog records the operators' actions; *store.Audit implements it.
type AuditLog interface {
	Begin(ctx context.Context, e store.AuditEntry) (created bool, stored store.AuditEntry, err error)
	Finish(ctx context.Context, id, state, result, errMsg string) error
	Get(ctx context.Context, id string) (store.AuditEntry, error)
}

// ErrNotAvailable is what the placeholders answer: the feature needs code the lead wires in.
var ErrNotAvailable = errors.New("not available")

// NotAvailable stands in for the Replier and the LinkMaker until the api service's send path and
// connect links are wired into the console: every call fails with ErrNotAvailable.
type NotAvailable struct{}

// Reply fails with ErrNotAvailable.
func (NotAvailable) Reply(context.Context, ReplyRequest) (ReplyResult, error) {
	return ReplyResult{}, ErrNotAvailable
}

// ConnectLink fails with ErrNotAvailable.
func (NotAvailable) ConnectLink(context.Context, string) (string, error) { return "", ErrNotAvailable }

// action is one state-changing request, once its form is read and its target found.
type action struct {
	// name is the audit entry's action (reply, assign, close, replay, reconnect).
	name     string
	tenantID string
	target   string
	// back is the page the operator returns to; ?req=<request id> is added so it shows the
	// outcome.
	back string
	// run does the work and returns a short result for the audit entry (never message text or a
	// secret).
	run func(ctx context.Context) (result string, err error)
}

// actionTimeout bounds an action once it has started.
const actionTimeout = 30 * time.Second

// perform runs a once per request id: the audit entry is created first, and a request whose id
// has an entry already (a double click, a resubmitted form) does not run it again. Either way the
// operator is sent back (303) to the page, which shows the entry's outcome.
func (s *Server) perform(w http.ResponseWriter, r *http.Request, a action) {
	ctx := r.Context()
	log := s.logger(ctx)
	id := r.PostForm.Get(RequestIDField)
	if !store.ValidRequestID(id) {
		s.renderError(w, r, http.StatusBadRequest, "The form has no valid request id: reload the page and try again.")
		return
	}
	created, stored, err := s.deps.Audit.Begin(ctx, store.AuditEntry{ID: id, Operator: OperatorFrom(ctx), Action: a.name,
		TenantID: a.tenantID, Target: a.target})
	if err != nil {
		s.fail(w, r, "Record the action", err)
		return
	}
	if !created {
		log.Info("action submitted again: not run twice", "event", "console_action_duplicate", "action", a.name,
			"request_id", id, "first_by", stored.Operator, "state", stored.State)
		s.redirectBack(w, r, a.back, id)
		return
	}
	// The action runs to its end even when the browser gives the request up (a second click
	// replaces the first one's navigation): its audit entry exists, so nothing would redo it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actionTimeout)
	defer cancel()
	result, runErr := a.run(runCtx)
	state, msg := store.AuditDone, ""
	if runErr != nil {
		state, msg = store.AuditFailed, userMessage(runErr)
		log.Warn("console action failed", "event", "console_action_failed", "action", a.name, "request_id", id,
			"tenant_id", a.tenantID, "target", a.target, "error", runErr)
	} else {
		log.Info("console action done", "event", "console_action_done", "action", a.name, "request_id", id,
			"tenant_id", a.tenantID, "target", a.target)
	}
	// The outcome must be recorded whatever happens to the request now.
	if err := s.deps.Audit.Finish(context.WithoutCancel(ctx), id, state, result, msg); err != nil {
		log.Error("record the action's outcome", "event", "console_audit_failed", "request_id", id, "error", err)
	}
	s.redirectBack(w, r, a.back, id)
}

func (s *Server) redirectBack(w http.ResponseWriter, r *http.Request, back, id string) {
	u := back + "?" + url.Values{"req": {id}}.Encode()
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// flash returns the audit entry the page was redirected with (?req=…), nil when none.
func (s *Server) flash(r *http.Request) *store.AuditEntry {
	id := r.URL.Query().Get("req")
	if id == "" || !store.ValidRequestID(id) {
		return nil
	}
	e, err := s.deps.Audit.Get(r.Context(), id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.logger(r.Context()).Warn("read audit entry", "event", "console_audit_read_failed", "error", err)
		}
		return nil
	}
	return &e
}
