package console

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Conversations reads a tenant's conversations and takes the operator's actions on one;
// *store.ConversationStore implements it.
type Conversations interface {
	ListConversations(ctx context.Context, q store.ConversationQuery) (store.ConversationPage, error)
	Get(ctx context.Context, conversationID string) (store.Conversation, error)
	LatestMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error)
	AssignConversation(ctx context.Context, conversationID, operator string) error
	CloseConversation(ctx context.Context, conversationID string) error
}

// InboxPageSize is how many conversations an inbox page shows.
const InboxPageSize = 50

type inboxView struct {
	TenantID, TenantName string
	Status               string
	Rows                 []inboxRow
	// Next is the next page's URL; "" on the last page.
	Next string
	// First says this is the first page (a link back to it is shown otherwise).
	First bool
}

type inboxRow struct {
	ID            string
	Contact       string
	Status        string
	AssignedTo    string
	LastMessageAt time.Time
	Pending       bool
}

// contactLabel shows a contact as an operator may see them: the profile name and the last digits
// of the number, never the whole number.
func contactLabel(name, waID string) string {
	return tenant.MemberLabel(tenant.Member{Name: name, WaID: waID})
}

func (s *Server) handleInbox() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := chi.URLParam(r, "tenant")
		rec, err := s.deps.Tenants.Get(ctx, id)
		if err != nil {
			s.fail(w, r, "Read the tenant", err)
			return
		}
		v, err := s.inbox(ctx, rec, r.URL.Query())
		if err != nil {
			s.fail(w, r, "List the conversations", err)
			return
		}
		s.render(w, r, http.StatusOK, "inbox", "", view{Title: "Inbox of " + rec.Tenant.Name, Nav: "tenants", Data: v})
	})
}

func (s *Server) inbox(ctx context.Context, rec store.TenantRecord, q url.Values) (inboxView, error) {
	status := q.Get("status")
	switch status {
	case store.ConversationOpen, store.ConversationClosed:
	case "all":
	default:
		status = store.ConversationOpen
	}
	filter := status
	if filter == "all" {
		filter = ""
	}
	after := q.Get("after")
	page, err := s.deps.Conversations.ListConversations(ctx, store.ConversationQuery{TenantID: rec.Tenant.ID, Status: filter,
		Limit: InboxPageSize, After: after})
	if err != nil {
		return inboxView{}, err
	}
	v := inboxView{TenantID: rec.Tenant.ID, TenantName: rec.Tenant.Name, Status: status, First: after == ""}
	now := s.deps.Now()
	for _, c := range page.Conversations {
		v.Rows = append(v.Rows, inboxRow{ID: c.ID, Contact: contactLabel(c.ContactName, c.Contact), Status: c.Status,
			AssignedTo: c.AssignedTo, LastMessageAt: c.LastMessageAt,
			Pending: c.State.Pending != nil && !c.State.Pending.Expired(now)})
	}
	if page.Next != "" {
		v.Next = "/tenants/" + url.PathEscape(rec.Tenant.ID) + "/inbox?" + url.Values{"status": {status}, "after": {page.Next}}.Encode()
	}
	return v, nil
}
