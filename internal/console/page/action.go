package page

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

// Action is one state-changing request, once its form is read and its target found.
type Action struct {
	// Name is the audit entry's action (reply, assign, close, replay, reconnect).
	Name     string
	TenantID string
	Target   string
	// Back is the page the operator returns to; ?req=<request id> is added so it shows the
	// outcome.
	Back string
	// Run does the work and returns a short result for the audit entry (never message text or a
	// secret).
	Run func(ctx context.Context) (result string, err error)
}

// actionTimeout bounds an action once it has started.
const actionTimeout = 30 * time.Second

// Perform runs a once per request id: the audit entry is created first, and a request whose id
// has an entry already (a double click, a resubmitted form) does not run it again. Either way the
// operator is sent back (303) to the page, which shows the entry's outcome.
func (k *Kit) Perform(w http.ResponseWriter, r *http.Request, a Action) {
	ctx := r.Context()
	log := Logger(ctx)
	id := r.PostForm.Get(RequestIDField)
	if !store.ValidRequestID(id) {
		k.RenderError(w, r, http.StatusBadRequest, "The form has no valid request id: reload the page and try again.")
		return
	}
	created, stored, err := k.Audit.Begin(ctx, store.AuditEntry{ID: id, Operator: OperatorFrom(ctx), Action: a.Name,
		TenantID: a.TenantID, Target: a.Target})
	if err != nil {
		k.Fail(w, r, "Record the action", err)
		return
	}
	if !created {
		log.Info("action submitted again: not run twice", "event", "console_action_duplicate", "action", a.Name,
			"request_id", id, "first_by", stored.Operator, "state", stored.State)
		redirectBack(w, r, a.Back, id)
		return
	}
	// The action runs to its end even when the browser gives the request up (a second click
	// replaces the first one's navigation): its audit entry exists, so nothing would redo it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actionTimeout)
	defer cancel()
	result, runErr := a.Run(runCtx)
	state, msg := store.AuditDone, ""
	if runErr != nil {
		state, msg = store.AuditFailed, UserMessage(runErr)
		log.Warn("console action failed", "event", "console_action_failed", "action", a.Name, "request_id", id,
			"tenant_id", a.TenantID, "target", a.Target, "error", runErr)
	} else {
		log.Info("console action done", "event", "console_action_done", "action", a.Name, "request_id", id,
			"tenant_id", a.TenantID, "target", a.Target)
	}
	// The outcome must be recorded whatever happens to the request now.
	if err := k.Audit.Finish(context.WithoutCancel(ctx), id, state, result, msg); err != nil {
		log.Error("record the action's outcome", "event", "console_audit_failed", "request_id", id, "error", err)
	}
	redirectBack(w, r, a.Back, id)
}

func redirectBack(w http.ResponseWriter, r *http.Request, back, id string) {
	u := back + "?" + url.Values{"req": {id}}.Encode()
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// Flash returns the audit entry the page was redirected with (?req=…), nil when none.
func (k *Kit) Flash(r *http.Request) *store.AuditEntry {
	id := r.URL.Query().Get("req")
	if id == "" || !store.ValidRequestID(id) {
		return nil
	}
	e, err := k.Audit.Get(r.Context(), id)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			Logger(r.Context()).Warn("read audit entry", "event", "console_audit_read_failed", "error", err)
		}
		return nil
	}
	return &e
}
