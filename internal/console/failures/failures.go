package failures

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// DeadLetterReader reads the dead letters; *store.DeadLetterStore implements it.
type DeadLetterReader interface {
	ListDeadLetterPage(ctx context.Context, q store.DeadLetterQuery) (store.DeadLetterPage, error)
	GetDeadLetter(ctx context.Context, id string) (store.DeadLetter, error)
}

// Replayer replays one dead letter with wapipe replay's guarantees (a sent reply stays sent, the
// replay task's name is derived from the dead letter, so a second replay creates nothing);
// *operator.Replayer implements it.
type Replayer interface {
	Replay(ctx context.Context, d store.DeadLetter, dryRun bool) (operator.ReplayResult, error)
}

// Inspector follows one event through wapipe's state as wapipe inspect does;
// *operator.Inspector implements it.
type Inspector interface {
	Inspect(ctx context.Context, id string) (*operator.Report, error)
}

// PageSize is how many dead letters a page shows.
const PageSize = 50

type failuresView struct {
	All   bool
	Rows  []deadLetterRow
	Next  string
	First bool
}

// deadLetterRow is a dead letter as the list shows it: its error (one line per error joined in
// it), attempts, tenant and conversation, and whether a replay can succeed. Never its body, which
// holds the customer's message.
type deadLetterRow struct {
	store.DeadLetter
	Route      string
	ErrorLines []string
	Attempts   int64
	// TenantID and ConversationID are read from the task's body where it names them (or its
	// number and contact); empty when it does not.
	TenantID, ConversationID string
	// InspectRef is what the inspect link searches for: the event's keyed ref (event_ref, as
	// its log lines carry it) when the dead letter names an inbound event, else the dead letter's
	// own id; never a wamid, an idempotency key derived from one, or a phone.
	InspectRef string
	// Replayable says a replay can do something; otherwise WhyNot says why it cannot.
	Replayable bool
	WhyNot     string
}

// deadLetterTarget is what a dead letter's body says about whom it concerns: every task body
// names some of these fields (tasks.Outbound, tasks.Send, tasks.Action, tasks.Inbound's Meta
// payload).
type deadLetterTarget struct {
	TenantID       string `json:"tenant_id"`
	ConversationID string `json:"conversation_id"`
	PhoneNumberID  string `json:"phone_number_id"`
	To             string `json:"to"`
	UserID         string `json:"user_id"`
	ParentUserID   string `json:"parent_user_id"`
	Payload        struct {
		Entry []struct {
			Changes []struct {
				Value struct {
					Metadata struct {
						PhoneNumberID string `json:"phone_number_id"`
					} `json:"metadata"`
					Messages []struct {
						From       string `json:"from"`
						FromUserID string `json:"from_user_id"`
					} `json:"messages"`
				} `json:"value"`
			} `json:"changes"`
		} `json:"entry"`
	} `json:"payload"`
}

// recordKey is the outbound record a replay of d would send, as operator.Replayer finds it (its
// route's row of tasks.Routes); "" for a dead letter whose task sends no record.
func recordKey(k *keyedid.Keyer, d store.DeadLetter) string {
	route, ok := tasks.TaskRoute(d.Path)
	if !ok {
		return ""
	}
	key, _ := route.ReplayRecord(k, d.IdempotencyKey, []byte(d.Body))
	return key
}

// deadLetterRows reads what the rows need beyond the dead letters: which tenant owns which
// number, the tenants' auth status and the outbound records a replay would send.
func (s *Server) deadLetterRows(ctx context.Context, dls []store.DeadLetter) ([]deadLetterRow, error) {
	recs, err := s.deps.Tenants.List(ctx)
	if err != nil {
		return nil, err
	}
	owner, auth := map[string]string{}, map[string]string{}
	for _, rec := range recs {
		auth[rec.Tenant.ID] = rec.AuthStatus
		for _, p := range rec.Tenant.PhoneNumbers {
			owner[p.PhoneNumberID] = rec.Tenant.ID
		}
	}
	rows := make([]deadLetterRow, len(dls))
	targets := make([]deadLetterTarget, len(dls))
	var keys []string
	for i, d := range dls {
		var t deadLetterTarget
		_ = json.Unmarshal([]byte(d.Body), &t) // a body that does not parse names nobody
		if t.PhoneNumberID == "" && len(t.Payload.Entry) > 0 && len(t.Payload.Entry[0].Changes) > 0 {
			v := t.Payload.Entry[0].Changes[0].Value
			t.PhoneNumberID = v.Metadata.PhoneNumberID
			if len(v.Messages) > 0 {
				t.To, t.UserID = v.Messages[0].From, v.Messages[0].FromUserID
			}
		}
		if t.TenantID == "" {
			t.TenantID = owner[t.PhoneNumberID]
		}
		if t.ConversationID == "" && t.TenantID != "" && t.PhoneNumberID != "" && (t.To != "" || t.UserID != "" || t.ParentUserID != "") {
			t.ConversationID = page.ConversationOf(ctx, s.deps.Contacts, t.TenantID, t.PhoneNumberID, contact.FromWebhook(t.To, t.UserID, t.ParentUserID, "", ""))
		}
		targets[i] = t
		if k := recordKey(s.deps.Keyer, d); k != "" {
			keys = append(keys, k)
		}
	}
	outs, err := s.deps.Outbound.GetOutbounds(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, d := range dls {
		t := targets[i]
		row := deadLetterRow{DeadLetter: d, Route: strings.TrimPrefix(d.Path, "/internal/"), Attempts: d.RetryCount + 1,
			TenantID: t.TenantID, ConversationID: t.ConversationID, InspectRef: d.ID}
		if d.InboundEventID != "" {
			row.InspectRef = s.deps.Hasher.Ref(d.InboundEventID)
		}
		for _, l := range strings.Split(d.LastError, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				row.ErrorLines = append(row.ErrorLines, l)
			}
		}
		key := recordKey(s.deps.Keyer, d)
		rec, hasRec := outs[key]
		row.WhyNot = whyNotReplayable(d, t, auth[t.TenantID], rec, hasRec && key != "")
		row.Replayable = row.WhyNot == ""
		row.Body = "" // not shown, and kept out of the page's memory
		rows[i] = row
	}
	return rows, nil
}

// whyNotReplayable says why replaying d cannot succeed, or "" when it can: replayed already, no
// task to rebuild, an error that would come back as it is, a reply sent already, or a tenant
// whose sends park until it is reconnected.
func whyNotReplayable(d store.DeadLetter, t deadLetterTarget, authStatus string, rec store.OutboundRecord, hasRec bool) string {
	route, ok := tasks.TaskRoute(d.Path)
	if !ok {
		return "unknown route: nothing to replay"
	}
	_, queueErr := route.QueueOf([]byte(d.Body))
	switch {
	case d.Replayed:
		return ""
	case d.Body == "":
		return "no task body kept: nothing to replay"
	case d.Queue == "" && queueErr != nil:
		// A replay goes to the queue the worker learned, else to the one the body's tenant says.
		return queueErr.Error()
	case d.Reason == "permanent":
		return "permanent error: a replay fails the same way until its cause is fixed (then wapipe replay " + d.ID + ")"
	case hasRec && rec.State == store.OutboundSent:
		return "the reply was sent already: a replay would send nothing"
	case t.TenantID != "" && authStatus != "" && authStatus != store.AuthOK:
		return "the tenant's token is " + authStatus + ": reconnect it first (its sends wait, parked)"
	}
	return ""
}

func (s *Server) handleFailures() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		all := q.Get("all") == "1"
		after := q.Get("after")
		dlPage, err := s.deps.DeadLetters.ListDeadLetterPage(r.Context(), store.DeadLetterQuery{OnlyPending: !all, Limit: PageSize, After: after})
		if err != nil {
			s.kit.Fail(w, r, "List the dead letters", err)
			return
		}
		rows, err := s.deadLetterRows(r.Context(), dlPage.DeadLetters)
		if err != nil {
			s.kit.Fail(w, r, "Read the dead letters' tenants and records", err)
			return
		}
		v := failuresView{All: all, First: after == "", Rows: rows}
		if dlPage.Next != "" {
			vals := url.Values{"after": {dlPage.Next}}
			if all {
				vals.Set("all", "1")
			}
			v.Next = "/failures?" + vals.Encode()
		}
		s.kit.Render(w, r, http.StatusOK, "failures", "", page.View{Title: "Failures", Nav: "failures", Flash: s.kit.Flash(r), Data: v})
	})
}

func (s *Server) handleReplay() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := s.deps.DeadLetters.GetDeadLetter(r.Context(), chi.URLParam(r, "deadletter"))
		if err != nil {
			s.kit.Fail(w, r, "Read the dead letter", err)
			return
		}
		// The button is shown only where a replay can succeed; a form from an older page is
		// held to the same rule.
		if !d.Replayed {
			rows, err := s.deadLetterRows(r.Context(), []store.DeadLetter{d})
			if err != nil {
				s.kit.Fail(w, r, "Read the dead letter's tenant and record", err)
				return
			}
			if why := rows[0].WhyNot; why != "" {
				s.kit.RenderError(w, r, http.StatusConflict, "This dead letter cannot be replayed: "+why+".")
				return
			}
		}
		s.kit.Perform(w, r, page.Action{Name: "replay", Target: d.ID, Back: "/failures", Run: func(ctx context.Context) (string, error) {
			res, err := s.deps.Replayer.Replay(ctx, d, false)
			if err != nil {
				return "", err
			}
			out := "replay task " + res.Task + " created"
			if res.Existed {
				out = "replay task " + res.Task + " existed already: nothing new was created"
			}
			if res.Reopened {
				out += fmt.Sprintf("; outbound record reopened (was %s)", res.RecordState)
			} else if res.RecordState == store.OutboundSent {
				out += "; the reply was sent already and will not be sent again"
			}
			return out, nil
		}})
	})
}

type searchView struct {
	Query  string
	Report string
	Error  string
}

// handleSearch shows what wapipe inspect shows for a wamid, an inbound_event_id, an idempotency
// key, a dead letter's id or an event_ref. Searches are POSTs behind the CSRF token (the form
// in every page's header and on this page), so that a wamid, which encodes the sender's number,
// never sits in a URL. A GET runs only a search whose id carries nothing of a person: an
// event_ref (ref_…, keyed) or a dead letter's id, as the failures page links them; any other id
// in a URL is refused unread.
func (s *Server) handleSearch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		if r.Method == http.MethodPost {
			q = strings.TrimSpace(r.PostForm.Get("q"))
		} else if q != "" && !linkableQuery(q) {
			s.kit.Render(w, r, http.StatusBadRequest, "search", "", page.View{Title: "Search", Nav: "failures",
				Data: searchView{Error: "ids are searched with the form, which keeps them out of URLs: paste it there"}})
			return
		}
		v := searchView{Query: q}
		status := http.StatusOK
		if q != "" {
			rep, err := s.deps.Inspector.Inspect(r.Context(), q)
			if err == nil {
				var b strings.Builder
				err = operator.WriteReport(&b, rep)
				v.Report = b.String()
			}
			if err != nil {
				v.Error = page.UserMessage(err)
				if v.Error == "nothing found" {
					status = http.StatusNotFound
				} else {
					status = http.StatusInternalServerError
					page.Logger(r.Context()).Error("inspect", "event", "console_search_failed", "error", err)
				}
			}
		}
		s.kit.Render(w, r, status, "search", "", page.View{Title: "Search", Nav: "failures", Data: v})
	})
}

// linkableQuery reports whether q may be searched from a URL: an event_ref (keyed: nobody
// computes it from a wamid without LOG_HASH_KEY) or a dead letter's id (a hash of its task, as
// in the failures page's own URLs).
func linkableQuery(q string) bool {
	if logging.IsRef(q) {
		return true
	}
	if len(q) != 64 {
		return false
	}
	_, err := hex.DecodeString(q)
	return err == nil && strings.ToLower(q) == q
}
