package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

// DeadLetterReader reads the dead letters; *store.DeadLetterStore implements it.
type DeadLetterReader interface {
	PageDeadLetters(ctx context.Context, q store.DeadLetterQuery) (store.DeadLetterPage, error)
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

// FailuresPageSize is how many dead letters a page shows.
const FailuresPageSize = 50

type failuresView struct {
	All   bool
	Rows  []deadLetterRow
	Next  string
	First bool
}

// deadLetterRow is a dead letter as the list shows it: its error and Meta code, never its body
// (which holds the customer's message).
type deadLetterRow struct {
	store.DeadLetter
	Route string
}

func (s *Server) handleFailures() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		all := q.Get("all") == "1"
		after := q.Get("after")
		page, err := s.deps.DeadLetters.PageDeadLetters(r.Context(), store.DeadLetterQuery{OnlyPending: !all, Limit: FailuresPageSize, After: after})
		if err != nil {
			s.fail(w, r, "List the dead letters", err)
			return
		}
		v := failuresView{All: all, First: after == ""}
		for _, d := range page.DeadLetters {
			d.Body = "" // not shown, and kept out of the page's memory
			v.Rows = append(v.Rows, deadLetterRow{DeadLetter: d, Route: strings.TrimPrefix(d.Path, "/internal/")})
		}
		if page.Next != "" {
			vals := url.Values{"after": {page.Next}}
			if all {
				vals.Set("all", "1")
			}
			v.Next = "/failures?" + vals.Encode()
		}
		s.render(w, r, http.StatusOK, "failures", "", view{Title: "Failures", Nav: "failures", Flash: s.flash(r), Data: v})
	})
}

func (s *Server) handleReplay() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := s.deps.DeadLetters.GetDeadLetter(r.Context(), chi.URLParam(r, "deadletter"))
		if err != nil {
			s.fail(w, r, "Read the dead letter", err)
			return
		}
		s.perform(w, r, action{name: "replay", target: d.ID, back: "/failures", run: func(ctx context.Context) (string, error) {
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
// key or an event_ref.
func (s *Server) handleSearch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := strings.TrimSpace(r.URL.Query().Get("q"))
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
				v.Error = userMessage(err)
				if v.Error == "nothing found" {
					status = http.StatusNotFound
				} else {
					status = http.StatusInternalServerError
					s.logger(r.Context()).Error("inspect", "event", "console_search_failed", "error", err)
				}
			}
		}
		s.render(w, r, status, "search", "", view{Title: "Search", Nav: "failures", Data: v})
	})
}
