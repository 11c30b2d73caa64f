package tenants

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/tasks"
)

// TenantReader reads the tenants; *store.Tenants implements it.
type TenantReader interface {
	List(ctx context.Context) ([]store.TenantRecord, error)
	Get(ctx context.Context, id string) (store.TenantRecord, error)
}

// UsageReader reads a tenant's LLM calls and tokens in a quota period; *store.Guard implements it.
type UsageReader interface {
	Usage(ctx context.Context, tenantID, period string) (int, error)
	Tokens(ctx context.Context, tenantID, period string) (store.TokenUsage, error)
	Ledger(ctx context.Context, tenantID, period string) (store.Ledger, error)
}

// QueueStatser reads a queue's backlog; *taskqueue.Admin implements it.
type QueueStatser interface {
	QueueStats(ctx context.Context, queue string) (taskqueue.QueueStats, error)
}

// LinkMaker makes the signed Embedded Signup link (valid 1 h) that a tenant's admin opens to
// connect WhatsApp again, as `wapipe tenants connect-link` prints it; SignupLinks makes them.
// Without one (no PUBLIC_BASE_URL), the console's stand-in says it is not available.
type LinkMaker interface {
	ConnectLink(ctx context.Context, tenantID string) (string, error)
}

// Row is one line of the tenants list (and of the overview's send queues). It holds no secret:
// the token's ciphertext stays in the store record.
type Row struct {
	ID, Name      string
	Numbers       []string
	AuthStatus    string
	AuthLastError string
	Period        string
	Used, Quota   int
	Limited       bool
	UsageErr      string
	QueueDepth    int64
	QueuePaused   bool
	// QueueOldest is when the oldest waiting task arrived; zero when none waits.
	QueueOldest time.Time
	QueueErr    string
	// Account is what Meta's account_update webhooks last said of the tenant's WhatsApp
	// Business Account; Account.Restricted stops its messaging.
	Account store.AccountStatus
}

// Rows lists the tenants with their usage this month and, with queues, their send queue's
// depth, read concurrently (the tenants page, and the overview's attention list and queues).
func (s *Server) Rows(ctx context.Context, now time.Time, queues bool) ([]Row, error) {
	recs, err := s.deps.Tenants.List(ctx)
	if err != nil {
		return nil, err
	}
	period := turnstate.Period(now)
	rows := make([]Row, len(recs))
	var wg sync.WaitGroup
	for i, rec := range recs {
		t := rec.Tenant
		row := &rows[i]
		*row = Row{ID: t.ID, Name: t.Name, AuthStatus: rec.AuthStatus, AuthLastError: rec.AuthLastError, Period: period,
			Account: rec.Account}
		for _, p := range t.PhoneNumbers {
			n := p.PhoneNumberID
			if p.Shared {
				n += " (shared)"
			}
			row.Numbers = append(row.Numbers, n)
		}
		row.Quota, row.Limited = t.Quota.MonthlyLLMCalls()
		wg.Go(func() {
			n, err := s.deps.Usage.Usage(ctx, t.ID, period)
			if err != nil {
				page.Logger(ctx).Warn("read usage", "event", "console_usage_failed", "tenant_id", t.ID, "error", err)
				row.UsageErr = "unavailable"
			}
			row.Used = n
		})
		if queues {
			wg.Go(func() {
				st, err := s.deps.Queues.QueueStats(ctx, tasks.TenantQueueID(t.ID))
				if err != nil {
					page.Logger(ctx).Warn("read queue stats", "event", "console_queue_failed", "tenant_id", t.ID, "error", err)
					row.QueueErr = "unavailable"
				}
				row.QueueDepth, row.QueuePaused, row.QueueOldest = st.Tasks, st.Paused, st.OldestArrival
			})
		}
	}
	wg.Wait()
	return rows, nil
}

func (s *Server) handleTenants() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rows, err := s.Rows(r.Context(), s.deps.Now(), true)
		if err != nil {
			s.kit.Fail(w, r, "List the tenants", err)
			return
		}
		s.kit.Render(w, r, http.StatusOK, "tenants", "", page.View{Title: "Tenants", Nav: "tenants", Data: rows})
	})
}

// tenantView is a tenant's page: its settings as applied and its runtime state, never its token
// or action secret.
type tenantView struct {
	T       *tenant.Tenant
	Members []memberView
	// PhoneOnlyMembers: a member is listed by phone with no BSUID known (memberView.NoUserID).
	PhoneOnlyMembers bool
	AuthStatus       string
	AuthLastError    string
	HasToken         bool
	TokenSetAt       time.Time
	Version          int64
	AppliedAt        time.Time
	Quota            int
	Limited          bool
	Used             int
	Period           string
	UsageErr         string
	// Tokens are the LLM tokens of Period (TokensErr when they could not be read).
	Tokens    store.TokenUsage
	TokensErr string
	// Invited are the members who joined by invite (InvitedErr when they could not be read).
	Invited    []invitedView
	InvitedErr string
	// Link is the Embedded Signup link just made by Reconnect; LinkError why it could not be.
	Link      string
	LinkError string
	// Account is what Meta last said of the tenant's WhatsApp Business Account (account_update).
	Account store.AccountStatus
	// Money is the month in money: the ledger's report and its days' chart (money.go).
	Money moneyView
	// Templates are the tenant's message templates as recorded; TemplatesErr why they are not.
	Templates    []store.Template
	TemplatesErr string
}

// memberView is a member the tenant file lists. NoUserID: listed by phone, and no BSUID is known
// for that phone yet: should they take a username and write without their number, they arrive
// by BSUID alone and are a stranger until their number is known.
type memberView struct {
	Label, Role, Language string
	NoUserID              bool
}

func (s *Server) tenantView(ctx context.Context, id string) (tenantView, error) {
	rec, err := s.deps.Tenants.Get(ctx, id)
	if err != nil {
		return tenantView{}, err
	}
	t := rec.Tenant
	v := tenantView{T: t, AuthStatus: rec.AuthStatus, AuthLastError: rec.AuthLastError, HasToken: len(rec.AccessToken) > 0,
		TokenSetAt: rec.TokenSetAt, Version: rec.Version, AppliedAt: rec.AppliedAt, Period: turnstate.Period(s.deps.Now()),
		Account: rec.Account}
	for _, m := range t.Members {
		v.Members = append(v.Members, memberView{Label: tenant.MemberLabel(m), Role: string(m.Role), Language: m.Language,
			NoUserID: s.noUserIDKnown(ctx, t.ID, m)})
		v.PhoneOnlyMembers = v.PhoneOnlyMembers || v.Members[len(v.Members)-1].NoUserID
	}
	v.Quota, v.Limited = t.Quota.MonthlyLLMCalls()
	v.Templates, v.TemplatesErr = s.tenantTemplates(ctx, t.ID) // templates.go
	if v.Used, err = s.deps.Usage.Usage(ctx, t.ID, v.Period); err != nil {
		page.Logger(ctx).Warn("read usage", "event", "console_usage_failed", "tenant_id", t.ID, "error", err)
		v.UsageErr = "unavailable"
	}
	if v.Tokens, err = s.deps.Usage.Tokens(ctx, t.ID, v.Period); err != nil {
		page.Logger(ctx).Warn("read token usage", "event", "console_usage_failed", "tenant_id", t.ID, "error", err)
		v.TokensErr = "unavailable"
	}
	v.Invited, v.InvitedErr = s.invitedMembers(ctx, t.ID)
	v.Money = s.moneyOf(ctx, t, v.Period)
	return v, nil
}

func (s *Server) handleTenant() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.tenantView(r.Context(), chi.URLParam(r, "tenant"))
		if err != nil {
			s.kit.Fail(w, r, "Read the tenant", err)
			return
		}
		s.kit.Render(w, r, http.StatusOK, "tenant", "", page.View{Title: v.T.Name, Nav: "tenants", Flash: s.kit.Flash(r), Data: v})
	})
}

// reconnectAction is the audit entry's action of a Reconnect.
const reconnectAction = "reconnect"

// handleReconnect makes the tenant's Embedded Signup link and shows it on the tenant's page. Every
// link made has exactly one audit entry: the request's id creates it, and a request whose id has
// an entry already (a double submit, a replayed form, the id of another tenant's or another
// action's form) makes no link. The link is a credential for an hour, never stored or logged, so
// a repeat cannot be shown the first one: it is told to press Reconnect again.
func (s *Server) handleReconnect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := chi.URLParam(r, "tenant")
		v, err := s.tenantView(ctx, id)
		if err != nil {
			s.kit.Fail(w, r, "Read the tenant", err)
			return
		}
		reqID := r.PostForm.Get(page.RequestIDField)
		if !store.ValidRequestID(reqID) {
			s.kit.RenderError(w, r, http.StatusBadRequest, "The form has no valid request id: reload the page and try again.")
			return
		}
		created, stored, err := s.kit.Audit.Begin(ctx, store.AuditEntry{ID: reqID, Operator: page.OperatorFrom(ctx), Action: reconnectAction,
			TenantID: id, Target: id})
		if err != nil {
			s.kit.Fail(w, r, "Record the action", err)
			return
		}
		if !created {
			if stored.Action != reconnectAction || stored.TenantID != id {
				page.Logger(ctx).Warn("request id of another action reused: refused", "event", "console_request_id_reused",
					"action", reconnectAction, "tenant_id", id, "request_id", reqID)
				s.kit.RenderError(w, r, http.StatusConflict, "This form's request id belongs to another action: reload the page and try again.")
				return
			}
			page.Logger(ctx).Info("action submitted again: no second link", "event", "console_action_duplicate",
				"action", reconnectAction, "tenant_id", id, "request_id", reqID, "first_by", stored.Operator, "state", stored.State)
			v.LinkError = "this request was handled already (a link is shown once): press Reconnect again for a new one"
			s.kit.Render(w, r, http.StatusOK, "tenant", "", page.View{Title: v.T.Name, Nav: "tenants", Data: v})
			return
		}
		link, err := s.deps.LinkMaker.ConnectLink(ctx, id)
		state, msg := store.AuditDone, ""
		if err != nil {
			state, msg = store.AuditFailed, page.UserMessage(err)
			v.LinkError = msg
			if !errors.Is(err, page.ErrNotAvailable) {
				page.Logger(ctx).Warn("make connect link", "event", "console_action_failed", "action", "reconnect", "tenant_id", id, "error", err)
			}
		} else {
			v.Link = link
		}
		if err := s.kit.Audit.Finish(context.WithoutCancel(ctx), reqID, state, "", msg); err != nil {
			page.Logger(ctx).Error("record the action's outcome", "event", "console_audit_failed", "request_id", reqID, "error", err)
		}
		s.kit.Render(w, r, http.StatusOK, "tenant", "", page.View{Title: v.T.Name, Nav: "tenants", Data: v})
	})
}

// noUserIDKnown reports whether m is listed by phone alone and the tenant's contact of that phone
// (if any) has no BSUID yet (CONTRACT.md, Wave 4: such a member who takes a username may write by
// BSUID alone and be a stranger until listed by user_id). False when it cannot be told (no
// contacts, a read that failed).
func (s *Server) noUserIDKnown(ctx context.Context, tenantID string, m tenant.Member) bool {
	if m.WaID == "" || m.UserID != "" || s.deps.Contacts == nil {
		return false
	}
	ct, ok, err := s.deps.Contacts.Find(ctx, tenantID, contact.Identity{WaID: m.WaID})
	if err != nil {
		page.Logger(ctx).Warn("read a member's contact", "event", "console_contact_failed", "tenant_id", tenantID, "error", err)
		return false
	}
	return !ok || (ct.UserID == "" && ct.ParentUserID == "")
}
