package inbox

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Conversations reads a tenant's conversations and takes the operator's actions on one;
// *store.ConversationStore implements it.
type Conversations interface {
	ListInbox(ctx context.Context, q store.InboxQuery) (store.ConversationPage, error)
	GetConversations(ctx context.Context, ids []string) ([]store.Conversation, error)
	ConversationsByNamePrefix(ctx context.Context, tenantID, prefix string, limit int) ([]store.Conversation, error)
	ConversationIDsByTextPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
	Get(ctx context.Context, conversationID string) (store.Conversation, error)
	ListLatestMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error)
	AssignConversation(ctx context.Context, conversationID, operator string) error
	// TakeOver and HandBack: an operator's reply silences the assistant in the conversation
	// for the tenant's human_pause; Hand back ends that at once.
	TakeOver(ctx context.Context, conversationID, by string, at time.Time) error
	HandBack(ctx context.Context, conversationID, by string) error
	CloseConversation(ctx context.Context, conversationID string) error
}

// PageSize is how many conversations an inbox page shows.
const PageSize = 50

// needsReplyScan is how many of the latest open conversations the "needs reply" filter looks
// at: whether one needs a reply is read from its messages, not from an indexed field.
const needsReplyScan = 100

// summaryWindow is how many of a conversation's latest messages its row reads: the preview and
// the unread count (shown as "5+" beyond it).
const summaryWindow = 5

// summaryConcurrency bounds the message reads of one list.
const summaryConcurrency = 8

// searchLimit caps each search's results.
const searchLimit = 50

// The inbox filters.
const (
	filterOpen       = "open"
	filterMine       = "mine"
	filterNeedsReply = "needs_reply"
	filterClosed     = "closed"
	filterAll        = "all"
)

var filterNames = []struct{ ID, Label string }{
	{filterOpen, "Open"}, {filterMine, "Assigned to me"}, {filterNeedsReply, "Needs reply"},
	{filterClosed, "Closed"}, {filterAll, "All"},
}

// inboxView is the conversation list of the split view: its filter, its rows and its pages.
type inboxView struct {
	TenantID, TenantName string
	Filter               string
	Filters              []filterLink
	Rows                 []inboxRow
	// Selected is the conversation open on the right ("" on the inbox page itself).
	Selected string
	// Next is the next page's URL; "" on the last page. First says this is the first page.
	Next  string
	First bool
	// Search is the search this list answers ("" for a filter's list); SearchNote explains it.
	// SearchShown is what the search box shows again: the query, but never a phone number or a
	// BSUID (identifiers are typed, never shown back).
	Search, SearchNote, SearchShown string
	// Note explains an empty list that is not a filter's (a conversation with no tenant).
	Note string
	// Scanned says the needs-reply filter looked at the latest needsReplyScan conversations only.
	Scanned int
	// ListURL is what the list's live refresh reads.
	ListURL string
}

type filterLink struct {
	ID, Label, URL string
	Current        bool
}

type inboxRow struct {
	ID            string
	Contact       string
	Status        string
	AssignedTo    string
	LastMessageAt time.Time
	Pending       bool
	summary
	// URL opens the conversation in the split view, keeping the list's filter.
	URL string
}

// inboxFilter reads the list's filter from a query (the older ?status= included); open when
// unknown.
func inboxFilter(q url.Values) string {
	f := q.Get("filter")
	if f == "" {
		f = q.Get("status")
	}
	for _, n := range filterNames {
		if n.ID == f {
			return f
		}
	}
	return filterOpen
}

// handleInbox shows a tenant's inbox: the list, and a prompt to pick a conversation beside it.
func (s *Server) handleInbox() http.Handler {
	return s.kit.WithTenant(s.deps.Tenants, func(w http.ResponseWriter, r *http.Request, rec store.TenantRecord) {
		list, err := s.inboxList(r.Context(), rec, r.URL.Query(), "")
		if err != nil {
			s.kit.Fail(w, r, "List the conversations", err)
			return
		}
		s.kit.Render(w, r, http.StatusOK, "inbox", "", page.View{Title: "Inbox of " + rec.Tenant.Name, Nav: "tenants",
			Flash: s.kit.Flash(r), Data: splitView{List: list}})
	})
}

// handleInboxList is the list fragment that the split view's live refresh reads.
func (s *Server) handleInboxList() http.Handler {
	return s.kit.WithTenant(s.deps.Tenants, func(w http.ResponseWriter, r *http.Request, rec store.TenantRecord) {
		list, err := s.inboxList(r.Context(), rec, r.URL.Query(), r.URL.Query().Get("c"))
		if err != nil {
			s.kit.Fail(w, r, "List the conversations", err)
			return
		}
		s.kit.Render(w, r, http.StatusOK, "inbox", "conv-list", page.View{Data: splitView{List: list}})
	})
}

// splitView is the inbox page: the list on the left, and on the right the conversation when one
// is open.
type splitView struct {
	List inboxView
	Conv *conversationView
}

func inboxURL(tenantID, filter string, extra url.Values) string {
	v := url.Values{"filter": {filter}}
	for k, vs := range extra {
		v[k] = vs
	}
	return "/tenants/" + url.PathEscape(tenantID) + "/inbox?" + v.Encode()
}

// inboxList reads the list of a filter; selected is the conversation open beside it.
func (s *Server) inboxList(ctx context.Context, rec store.TenantRecord, q url.Values, selected string) (inboxView, error) {
	filter := inboxFilter(q)
	id := rec.Tenant.ID
	after := q.Get("after")
	v := inboxView{TenantID: id, TenantName: rec.Tenant.Name, Filter: filter, Selected: selected, First: after == ""}
	for _, n := range filterNames {
		v.Filters = append(v.Filters, filterLink{ID: n.ID, Label: n.Label, URL: inboxURL(id, n.ID, nil), Current: n.ID == filter})
	}
	v.ListURL = "/tenants/" + url.PathEscape(id) + "/inbox/list?" + url.Values{"filter": {filter}, "c": {selected}}.Encode()
	if id == "" {
		// The single-tenant default number's conversations belong to no tenant: no inbox lists them.
		v.Note, v.Filters = "This conversation belongs to no tenant (the default number): no inbox lists it.", nil
		return v, nil
	}
	iq := store.InboxQuery{TenantID: id, Status: store.ConversationOpen, Limit: PageSize, After: after}
	switch filter {
	case filterMine:
		iq.AssignedTo = page.OperatorFrom(ctx)
	case filterNeedsReply:
		iq.Limit, iq.After, v.First = needsReplyScan, "", true
	case filterClosed:
		iq.Status = store.ConversationClosed
	case filterAll:
		iq.Status = ""
	}
	listed, err := s.deps.Conversations.ListInbox(ctx, iq)
	if err != nil {
		return inboxView{}, err
	}
	v.Rows = s.inboxRows(ctx, listed.Conversations, filter)
	if filter == filterNeedsReply {
		v.Rows = slices.DeleteFunc(v.Rows, func(r inboxRow) bool { return !r.NeedsReply })
		if len(listed.Conversations) >= needsReplyScan {
			v.Scanned = needsReplyScan
		}
	} else if listed.Next != "" {
		v.Next = inboxURL(id, filter, url.Values{"after": {listed.Next}})
	}
	return v, nil
}

// inboxRows summarises convs from their latest messages, read concurrently; a conversation whose
// messages cannot be read is listed without its preview.
func (s *Server) inboxRows(ctx context.Context, convs []store.Conversation, filter string) []inboxRow {
	now := s.deps.Now()
	rows := make([]inboxRow, len(convs))
	sem := make(chan struct{}, summaryConcurrency)
	var wg sync.WaitGroup
	for i, c := range convs {
		rows[i] = inboxRow{ID: c.ID, Contact: conversationPerson(c).Label, Status: c.Status,
			AssignedTo: c.AssignedTo, LastMessageAt: c.LastMessageAt,
			Pending: c.State.Pending != nil && !c.State.Pending.Expired(now),
			URL:     "/conversations/" + url.PathEscape(c.ID) + "?" + url.Values{"filter": {filter}}.Encode()}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			msgs, err := s.deps.Conversations.ListLatestMessages(ctx, c.ID, summaryWindow)
			if err != nil {
				page.Logger(ctx).Warn("read a conversation's latest messages", "event", "console_summary_failed",
					"conversation_id", c.ID, "error", err)
				rows[i].Preview = "(messages unavailable)"
				return
			}
			rows[i].summary = summarize(msgs)
		})
	}
	wg.Wait()
	return rows
}

// summary is what a row says of a conversation's latest messages.
type summary struct {
	// Preview is the last message's first line, cut short; PreviewOut says the business sent it.
	Preview    string
	PreviewOut bool
	// Unread counts the contact's messages since the business last answered (bot, operator or
	// action result); UnreadMore says there may be more than summaryWindow. A message the
	// assistant ignores on purpose (a reaction, a system notice) needs no answer and is not
	// counted.
	Unread     int
	UnreadMore bool
	// NeedsReply: the last message is the contact's and nothing answered it.
	NeedsReply bool
}

// previewRunes is how much of a message the list shows.
const previewRunes = 80

func summarize(msgs []store.Message) summary {
	items := timeline(msgs)
	var s summary
	if len(items) == 0 {
		return s
	}
	last := items[len(items)-1]
	s.Preview, s.PreviewOut = preview(last), last.Direction == store.DirectionOut
	for i := len(items) - 1; i >= 0 && items[i].Direction == store.DirectionIn; i-- {
		if items[i].RawEvent == eventIgnored {
			continue
		}
		s.Unread++
	}
	s.UnreadMore = s.Unread >= summaryWindow
	s.NeedsReply = s.Unread > 0
	return s
}

// eventIgnored is assistant.EventIgnored: a message the assistant leaves unanswered on purpose.
const eventIgnored = "ignored"

func preview(it messageView) string {
	text := it.Text
	if text == "" && it.Media != nil {
		text = it.Media.Caption
		if text == "" {
			text = it.Media.Filename
		}
	}
	if text == "" {
		return "(" + it.Type + ")"
	}
	text, _, _ = strings.Cut(text, "\n")
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) > previewRunes {
		r := []rune(text)
		text = strings.TrimRightFunc(string(r[:previewRunes]), unicode.IsSpace) + "…"
	}
	return text
}

// handleInboxSearch finds a tenant's conversations by the contact's number, BSUID, name or
// username, or the beginning of a message's text. It is a POST behind the CSRF token, so that a
// number, a BSUID, a username or message text never sits in a URL (Cloud Run's request logs keep
// URLs): an identifier is turned into the tenant's contact, and that into its conversations on
// the tenant's numbers. Nothing is changed, nothing audited.
func (s *Server) handleInboxSearch() http.Handler {
	return s.kit.WithTenant(s.deps.Tenants, func(w http.ResponseWriter, r *http.Request, rec store.TenantRecord) {
		ctx := r.Context()
		q := strings.TrimSpace(r.PostForm.Get("q"))
		list, err := s.inboxList(ctx, rec, url.Values{"filter": {filterAll}}, "")
		if err != nil {
			s.kit.Fail(w, r, "List the conversations", err)
			return
		}
		list.Search, list.Next, list.First = q, "", true
		if q == "" {
			list.SearchNote = "Type a phone number, a name, a @username, a WhatsApp user id or the beginning of a message."
			list.Rows = nil
		} else {
			res, err := s.search(ctx, rec, q)
			if err != nil {
				s.kit.Fail(w, r, "Search the conversations", err)
				return
			}
			list.SearchNote, list.Rows = res.note, s.inboxRows(ctx, res.convs, filterAll)
			if !res.identifier {
				list.SearchShown = q
			}
		}
		s.kit.Render(w, r, http.StatusOK, "inbox", "", page.View{Title: "Inbox of " + rec.Tenant.Name, Nav: "tenants",
			Data: splitView{List: list}})
	})
}

// searchResult is what a search found: the conversations, newest first, a line saying how they
// were found, and whether the query was an identifier (a phone number, a BSUID), which the page
// does not show back.
type searchResult struct {
	convs      []store.Conversation
	note       string
	identifier bool
}

// UsernameSearcher finds a tenant's conversations whose contact's username begins with prefix
// (as stored, without its "@": case counts), by username, up to limit. A store query on the
// conversations' username field does it with a composite index (tenant_id, username); until
// Conversations implements it, the console looks through the tenant's latest UsernameScan
// conversations instead.
type UsernameSearcher interface {
	ConversationsByUsernamePrefix(ctx context.Context, tenantID, prefix string, limit int) ([]store.Conversation, error)
}

// UsernameFinder finds the conversations (of every tenant) of a contact with exactly a username,
// as Meta sent it, up to limit (store.ConversationStore.ConversationsByUsername). Without a
// UsernameSearcher, it finds a username typed whole beyond the conversations the console looks
// through.
type UsernameFinder interface {
	ConversationsByUsername(ctx context.Context, username string, limit int) ([]store.Conversation, error)
}

// UsernameScan is how many of a tenant's latest conversations a username search reads when the
// store cannot query usernames by prefix (UsernameSearcher).
const UsernameScan = 500

// search finds the tenant's conversations that q names.
func (s *Server) search(ctx context.Context, rec store.TenantRecord, q string) (searchResult, error) {
	t := rec.Tenant
	if digits, ok := phoneQuery(q); ok {
		convs, err := s.conversationsOf(ctx, t, contact.Identity{WaID: digits})
		if err != nil {
			return searchResult{}, err
		}
		page.Logger(ctx).Info("inbox searched by number", "event", "console_search_number", "tenant_id", t.ID,
			logging.Phone("contact", digits), "found", len(convs))
		return searchResult{convs: convs, note: "Conversations with the number ending " + lastDigits(digits) + ".", identifier: true}, nil
	}
	if contact.ValidUserID(q) || contact.ValidParentUserID(q) {
		id := contact.Identity{UserID: q}
		if contact.ValidParentUserID(q) {
			id = contact.Identity{ParentUserID: q}
		}
		convs, err := s.conversationsOf(ctx, t, id)
		if err != nil {
			return searchResult{}, err
		}
		page.Logger(ctx).Info("inbox searched by user id", "event", "console_search_user_id", "tenant_id", t.ID,
			logging.User("contact", q), "found", len(convs))
		return searchResult{convs: convs, note: "Conversations of the contact with this WhatsApp user id.", identifier: true}, nil
	}
	for _, ref := range []struct{ prefix, what string }{
		{logging.PhonePrefix, "the number itself"}, {logging.UserPrefix, "the WhatsApp user id itself"}, {logging.UsernamePrefix, "the @username itself"},
	} {
		if strings.HasPrefix(q, ref.prefix) {
			return searchResult{note: "A " + ref.prefix + " reference is one-way: search with " + ref.what + "."}, nil
		}
	}
	found := map[string]store.Conversation{}
	if name, ok := strings.CutPrefix(q, "@"); ok {
		// "@name" is a username and nothing else.
		partial, err := s.searchUsernames(ctx, t.ID, name, found)
		if err != nil {
			return searchResult{}, err
		}
		page.Logger(ctx).Info("inbox searched by username", "event", "console_search_username", "tenant_id", t.ID,
			logging.Username("username", name), "found", len(found))
		return searchResult{convs: newestFirst(slices.Collect(maps.Values(found))),
			note: "Contacts whose username begins with what you typed." + partial}, nil
	}
	for _, prefix := range namePrefixes(q) {
		convs, err := s.deps.Conversations.ConversationsByNamePrefix(ctx, t.ID, prefix, searchLimit)
		if err != nil {
			return searchResult{}, err
		}
		for _, c := range convs {
			found[c.ID] = c
		}
	}
	partial, err := s.searchUsernames(ctx, t.ID, q, found)
	if err != nil {
		return searchResult{}, err
	}
	ids, err := s.deps.Conversations.ConversationIDsByTextPrefix(ctx, q, searchLimit*4)
	if err != nil {
		return searchResult{}, err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { _, ok := found[id]; return ok })
	byText, err := s.deps.Conversations.GetConversations(ctx, ids)
	if err != nil {
		return searchResult{}, err
	}
	for _, c := range byText {
		// Messages carry no tenant: the conversation says whose it is.
		if c.TenantID == t.ID {
			found[c.ID] = c
		}
	}
	convs := newestFirst(slices.Collect(maps.Values(found)))
	if len(convs) > searchLimit {
		convs = convs[:searchLimit]
	}
	return searchResult{convs: convs,
		note: "Contacts whose name or username, or conversations with a message that, begins with what you typed." + partial}, nil
}

// conversationsOf are the conversations of the person id names on each of the tenant's
// numbers, newest first: the tenant's contact of any of its identifiers finds them.
func (s *Server) conversationsOf(ctx context.Context, t *tenant.Tenant, id contact.Identity) ([]store.Conversation, error) {
	var ids []string
	for _, p := range t.PhoneNumbers {
		if conv := page.ConversationOf(ctx, s.deps.Contacts, t.ID, p.PhoneNumberID, id); conv != "" {
			ids = append(ids, conv)
		}
	}
	convs, err := s.deps.Conversations.GetConversations(ctx, ids)
	if err != nil {
		return nil, err
	}
	// A conversation of another tenant never answers (the ids are the tenant's own).
	convs = slices.DeleteFunc(convs, func(c store.Conversation) bool { return c.TenantID != t.ID })
	return newestFirst(convs), nil
}

// searchUsernames adds to found the tenant's conversations whose contact's username begins with
// name (its "@" dropped; usernames are not case-sensitive, but stored as the user wrote them).
// When the store cannot query usernames by prefix (UsernameSearcher), it looks for the username
// typed whole (UsernameFinder) and through the tenant's latest UsernameScan conversations, and
// says so in a sentence it returns when the tenant has more.
func (s *Server) searchUsernames(ctx context.Context, tenantID, name string, found map[string]store.Conversation) (string, error) {
	name = strings.TrimPrefix(strings.TrimSpace(name), "@")
	if name == "" {
		return "", nil
	}
	if us, ok := s.deps.Conversations.(UsernameSearcher); ok {
		for _, prefix := range usernamePrefixes(name) {
			convs, err := us.ConversationsByUsernamePrefix(ctx, tenantID, prefix, searchLimit)
			if err != nil {
				return "", err
			}
			for _, c := range convs {
				found[c.ID] = c
			}
		}
		return "", nil
	}
	if uf, ok := s.deps.Conversations.(UsernameFinder); ok {
		for _, whole := range usernamePrefixes(name) {
			convs, err := uf.ConversationsByUsername(ctx, whole, searchLimit)
			if err != nil {
				return "", err
			}
			for _, c := range convs {
				if c.TenantID == tenantID {
					found[c.ID] = c
				}
			}
		}
	}
	listed, err := s.deps.Conversations.ListInbox(ctx, store.InboxQuery{TenantID: tenantID, Limit: UsernameScan})
	if err != nil {
		return "", err
	}
	lower := strings.ToLower(name)
	for _, c := range listed.Conversations {
		if c.Username != "" && strings.HasPrefix(strings.ToLower(strings.TrimPrefix(c.Username, "@")), lower) {
			found[c.ID] = c
		}
	}
	if listed.Next != "" {
		return fmt.Sprintf(" Usernames are looked for among the latest %d conversations only.", UsernameScan), nil
	}
	return "", nil
}

// usernamePrefixes are the prefixes a username search tries: as typed, in lower case, and with
// a capital first letter.
func usernamePrefixes(name string) []string {
	out := []string{name}
	for _, p := range append([]string{strings.ToLower(name)}, namePrefixes(strings.ToLower(name))...) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// phoneQuery reports whether q is a phone number (digits with +, spaces, dashes, dots or
// parentheses, at least 6 digits) and returns its digits, Meta's wa_id form.
func phoneQuery(q string) (string, bool) {
	digits := 0
	for _, r := range q {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune("+ -.()", r):
		default:
			return "", false
		}
	}
	if digits < 6 {
		return "", false
	}
	return logging.NormalizePhone(q), true
}

func lastDigits(d string) string {
	if len(d) > 4 {
		return d[len(d)-4:]
	}
	return d
}

// namePrefixes are the prefixes a name search tries: as typed, and with a capital first letter
// (names are stored as the contacts wrote them, and Firestore compares case).
func namePrefixes(q string) []string {
	r, n := utf8.DecodeRuneInString(q)
	title := string(unicode.ToUpper(r)) + q[n:]
	if title == q {
		return []string{q}
	}
	return []string{q, title}
}

func newestFirst(convs []store.Conversation) []store.Conversation {
	slices.SortStableFunc(convs, func(a, b store.Conversation) int { return b.LastMessageAt.Compare(a.LastMessageAt) })
	return convs
}
