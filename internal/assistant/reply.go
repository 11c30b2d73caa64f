package assistant

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// The reply button ids of a confirmation (the contract's names).
const (
	ButtonYes = "confirm_yes"
	ButtonNo  = "confirm_no"
)

// Meta's limits on what a turn sends.
const (
	// MaxTextLen is a text message body's limit.
	MaxTextLen = 4096
	// MaxButtonBodyLen is an interactive message body's limit.
	MaxButtonBodyLen = 1024
	// MaxButtonTitleLen is a reply button title's limit.
	MaxButtonTitleLen = 20
)

// Reply is one message a turn sends. The worker sends it with outgoing.Message's rules (Text,
// or Message with the recipient filled in) under its own idempotency record.
type Reply struct {
	outgoing.Message
	// Index is the reply's position in the turn, from 0: the worker derives each reply's
	// idempotency key from the inbound message id and Index, so a redone turn sends none twice.
	Index int
	// Key is the system message the reply is, empty for the model's own text: the store marks
	// i18n.QuotaExceeded replies quota_exceeded.
	Key i18n.Key
}

// Body is the reply's text: a text reply's, or an interactive message's body.
func (r Reply) Body() string {
	if m := r.Graph; m != nil && m.Interactive != nil && m.Interactive.Body != nil {
		return m.Interactive.Body.Text
	}
	return r.Text
}

// replies builds a turn's reply list, numbering it.
type replies []Reply

func (rs *replies) text(text string, key i18n.Key, quote bool) {
	*rs = append(*rs, Reply{Message: outgoing.Message{Text: graph.Clip(text, MaxTextLen), Quote: quote}, Index: len(*rs), Key: key})
}

func (rs *replies) system(lang string, key i18n.Key) { rs.text(i18n.Text(lang, key), key, false) }

// confirm adds the confirmation: the model's reply, then the data the action will carry (see
// dataLines), with the confirm_yes and confirm_no buttons. The data lines stay in the message
// with the buttons whenever they fit its 1024 characters: the reply then goes first as text
// when the two do not fit together. Data too long for the buttons' message go as their own
// text, and the buttons follow under the localized "shall I go ahead?". It reports false, and
// adds nothing, when the data do not fit in a text message either: the user could not see all
// of what they would confirm.
func (rs *replies) confirm(lang, reply, data string) bool {
	if utf8.RuneCountInString(data) > MaxTextLen {
		return false
	}
	if strings.TrimSpace(reply) == "" {
		reply = i18n.Text(lang, i18n.ConfirmPrompt)
	}
	body := reply
	if data != "" {
		body = reply + "\n\n" + data
	}
	switch {
	case utf8.RuneCountInString(body) <= MaxButtonBodyLen:
	case data != "" && utf8.RuneCountInString(data) <= MaxButtonBodyLen:
		rs.text(reply, "", false)
		body = data
	case data != "":
		rs.text(reply, "", false)
		rs.text(data, "", false)
		body = i18n.Text(lang, i18n.ConfirmPrompt)
	default:
		rs.text(reply, "", false)
		body = i18n.Text(lang, i18n.ConfirmPrompt)
	}
	msg := &graph.Message{Type: "interactive", Interactive: &graph.Interactive{
		Type: "button",
		Body: &graph.Body{Text: body},
		Action: graph.Action{Buttons: []graph.ActionButton{
			{Type: "reply", Reply: graph.ButtonReply{ID: ButtonYes, Title: graph.Clip(i18n.Text(lang, i18n.ButtonConfirm), MaxButtonTitleLen)}},
			{Type: "reply", Reply: graph.ButtonReply{ID: ButtonNo, Title: graph.Clip(i18n.Text(lang, i18n.ButtonCancel), MaxButtonTitleLen)}},
		}},
	}}
	*rs = append(*rs, Reply{Message: outgoing.Message{Graph: msg}, Index: len(*rs)})
	return true
}

// OptionPrefix starts the ids of the buttons and rows of the model's choices: "option:<id>".
const OptionPrefix = "option:"

// choices adds the reply with the model's options: up to three as reply buttons (titles cut
// to 20 characters), more as a list (24, with their descriptions), and returns what was
// offered. A reply too long for an interactive body goes first as text.
func (rs *replies) choices(lang, reply string, options []llm.Option) []turnstate.Option {
	body := reply
	if utf8.RuneCountInString(reply) > MaxButtonBodyLen {
		rs.text(reply, "", false)
		body = i18n.Text(lang, i18n.ButtonChoose)
	}
	offered := make([]turnstate.Option, 0, len(options))
	it := &graph.Interactive{Type: "button", Body: &graph.Body{Text: body}}
	if len(options) > graph.MaxReplyButtons {
		it.Type, it.Action.Button = "list", graph.Clip(i18n.Text(lang, i18n.ButtonChoose), MaxButtonTitleLen)
		it.Action.Sections = []graph.Section{{}}
	}
	for _, o := range options {
		offered = append(offered, turnstate.Option{ID: o.ID, Title: o.Title})
		if it.Type == "button" {
			it.Action.Buttons = append(it.Action.Buttons, graph.ActionButton{Type: "reply",
				Reply: graph.ButtonReply{ID: OptionPrefix + o.ID, Title: graph.Clip(o.Title, MaxButtonTitleLen)}})
			continue
		}
		it.Action.Sections[0].Rows = append(it.Action.Sections[0].Rows, graph.Row{ID: OptionPrefix + o.ID,
			Title: graph.Clip(o.Title, graph.MaxListRowTitle), Description: graph.Clip(o.Description, graph.MaxListRowDescription)})
	}
	*rs = append(*rs, Reply{Message: outgoing.Message{Graph: &graph.Message{Type: "interactive", Interactive: it}}, Index: len(*rs)})
	return offered
}

// actionData keeps the intent's fields of d that have a value, and only those: the data lines
// show each of them, so nothing reaches the business that the user was not shown. The llm
// package drops other keys already; the Extractor is not trusted for it.
func actionData(in tenant.Intent, d map[string]any) map[string]any {
	out := make(map[string]any, len(in.Fields))
	for _, f := range in.Fields {
		if v, ok := d[f.Name]; ok && v != nil {
			out[f.Name] = v
		}
	}
	return out
}

// dataLines renders data as wapipe shows it under a confirmation, in lang: one "label: value"
// line per field that has a value, in the intent's field order (the tenant file's), the label
// the file gives the field in lang (else its name) and the value written the way lang writes it
// (showValue). It is built from the data the action will carry, never from the model's prose,
// so what the user confirms is what the business receives; only its writing changes.
func dataLines(lang, currency string, in tenant.Intent, data map[string]any) string {
	var b strings.Builder
	for _, f := range in.Fields {
		v, ok := data[f.Name]
		if !ok {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.LabelIn(lang) + ": " + showValue(lang, currency, f.Type, v))
	}
	return b.String()
}

// showValue writes a field's value of type typ for people reading lang: numbers with lang's
// separators, money with the tenant's currency (IDR "Rp15.000.000"), dates spelled ("1 Maret
// 2026"), booleans as lang's yes or no; anything else as fieldValue does.
func showValue(lang, currency string, typ tenant.FieldType, v any) string {
	var num float64
	isNum := true
	switch x := v.(type) {
	case int64:
		num = float64(x)
	case float64:
		num = x
	default:
		isNum = false
	}
	switch {
	case isNum && typ == tenant.FieldMoney && currency != "":
		return i18n.FormatMoney(lang, currency, num)
	case isNum && math.Abs(num) < 1e15:
		return i18n.FormatNumber(lang, num)
	case typ == tenant.FieldBoolean:
		if b, ok := v.(bool); ok {
			return i18n.FormatBool(lang, b)
		}
	case typ == tenant.FieldDate:
		if s, ok := v.(string); ok {
			if d, err := time.Parse(time.DateOnly, s); err == nil {
				return i18n.FormatDate(lang, d)
			}
		}
	case typ == tenant.FieldDateTime:
		if s, ok := v.(string); ok {
			if d, err := time.Parse("2006-01-02T15:04", s); err == nil {
				return i18n.FormatDate(lang, d) + ", " + d.Format("15:04")
			}
		}
	}
	return fieldValue(v)
}

// fieldValue is one value as the action's JSON body carries it: a number or a boolean in its
// JSON form. A string is shown as it is unless it holds a character that is not printable (a
// line break, a direction override, a zero-width character): then quoted with escapes, so a
// value cannot draw extra lines or reorder what the user reads.
func fieldValue(v any) string {
	if x, ok := v.(string); ok {
		if strings.IndexFunc(x, func(r rune) bool { return !strconv.IsPrint(r) }) >= 0 {
			return strconv.Quote(x)
		}
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// transcript is what the turn sent, for the turn's record.
func (rs replies) transcript() string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.Body())
	}
	return strings.Join(parts, "\n\n")
}
