package logging

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// Redacted is what a private value renders as where no Hasher can make its ref.
const Redacted = "[redacted]"

// Keys of the refs in log lines (CONTRACT.md, Logs).
const (
	EventRefKey   = "event_ref"
	MessageRefKey = "message_ref"
)

type privateKind uint8

const (
	kindID privateKind = iota
	kindPhone
	kindUser
	kindUsername
)

// private is an id or a phone number on its way to a log line. wapipe's handler renders it as its
// keyed ref; any other handler gets LogValue, which never shows the value.
type private struct {
	kind privateKind
	v    string
}

// LogValue hides the value from handlers that do not know how to hash it.
func (p private) LogValue() slog.Value { return slog.StringValue(Redacted) }

// String hides the value from fmt too.
func (p private) String() string { return Redacted }

// EventID is the attribute event_ref for an inbound_event_id (or any wamid naming the event).
func EventID(id string) slog.Attr { return slog.Any(EventRefKey, private{kindID, id}) }

// MessageID is the attribute message_ref for a message id (a Graph message id, a wamid).
func MessageID(id string) slog.Attr { return slog.Any(MessageRefKey, private{kindID, id}) }

// ID is an attribute named key holding the ref of an id.
func ID(key, id string) slog.Attr { return slog.Any(key, private{kindID, id}) }

// Phone is an attribute named key holding the ph_ ref of a phone number or WhatsApp id.
func Phone(key, number string) slog.Attr { return slog.Any(key, private{kindPhone, number}) }

// User is an attribute named key holding the us_ ref of a business-scoped user id (BSUID) or a
// parent BSUID.
func User(key, userID string) slog.Attr { return slog.Any(key, private{kindUser, userID}) }

// Username is an attribute named key holding the un_ ref of a WhatsApp username.
func Username(key, name string) slog.Attr { return slog.Any(key, private{kindUsername, name}) }

// wamidPattern finds wamids inside longer strings (error messages, document paths).
var wamidPattern = regexp.MustCompile(`wamid\.[A-Za-z0-9+/=_-]+`)

// privacyHandler renders private values as refs and, as a last line of defence, replaces any
// wamid in the message or a string value (errors included) by its ref.
type privacyHandler struct {
	next   slog.Handler
	hasher *Hasher // nil: private values and wamids render as Redacted
}

func (h *privacyHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *privacyHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *privacyHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	safe := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		safe[i] = h.attr(a)
	}
	return &privacyHandler{next: h.next.WithAttrs(safe), hasher: h.hasher}
}

func (h *privacyHandler) WithGroup(name string) slog.Handler {
	return &privacyHandler{next: h.next.WithGroup(name), hasher: h.hasher}
}

// attr returns a with private values hashed and wamids replaced.
func (h *privacyHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value
	if v.Kind() == slog.KindLogValuer {
		if p, ok := v.Any().(private); ok {
			return slog.String(a.Key, h.ref(p))
		}
		v = v.Resolve()
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.scrub(v.String()))
	case slog.KindGroup:
		as := v.Group()
		safe := make([]slog.Attr, len(as))
		for i, g := range as {
			safe[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(safe...)}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok && err != nil {
			if s := err.Error(); strings.Contains(s, "wamid.") {
				return slog.String(a.Key, h.scrub(s))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h *privacyHandler) ref(p private) string {
	if h.hasher == nil {
		return Redacted
	}
	switch p.kind {
	case kindPhone:
		return h.hasher.Phone(p.v)
	case kindUser:
		return h.hasher.User(p.v)
	case kindUsername:
		return h.hasher.Username(p.v)
	}
	return h.hasher.Ref(p.v)
}

// scrub replaces wamids in s: a value that is one id (a wamid, or a status event id
// "wamid.…:sent") becomes its ref, as EventID would render it; wamids inside text become theirs.
func (h *privacyHandler) scrub(s string) string {
	if !strings.Contains(s, "wamid.") {
		return s
	}
	if strings.HasPrefix(s, "wamid.") && !strings.ContainsAny(s, " \t\n\"'") {
		return h.ref(private{kindID, s})
	}
	return wamidPattern.ReplaceAllStringFunc(s, func(id string) string { return h.ref(private{kindID, id}) })
}
