package notify

import (
	"strconv"
	"strings"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Message is one notification: its text, and the template that replaces it outside the
// member's 24-hour window (nil when the tenant has no templates.notify).
type Message struct {
	Text     graph.Message
	Fallback *graph.Message
}

// The limits of what a notification carries.
const (
	// maxText is WhatsApp's limit on a text body.
	maxText = 4096
	// maxParam bounds one template parameter: a template's body, its own text included, must
	// stay under Meta's 1024 characters.
	maxParam = 600
)

// Compose is the notification of an action of intent in, asked by from, to member m, in m's
// language (else the tenant's): the localized line naming the intent and the sender (Sender),
// then the confirmed data as the confirmation showed them (assistant.DataLines).
func Compose(tn *tenant.Tenant, in tenant.Intent, m tenant.Member, from actioncall.From, data map[string]any) Message {
	lang := tn.EffectiveLanguage(m)
	sender := Sender(from, lang)
	text := i18n.Text(lang, i18n.Notification, "intent", in.Name, "sender", sender)
	lines := assistant.DataLines(lang, tn, in, data)
	if lines != "" {
		text += "\n\n" + lines
	}
	msg := Message{Text: graph.Message{Type: "text", Text: &graph.Text{Body: graph.Clip(text, maxText)}}}
	if t := tn.Templates.Notify; t != nil {
		msg.Fallback = Template(t, in.Name, sender, lines)
	}
	return msg
}

// Template is templates.notify filled for one notification: its body's three text parameters
// are, in order, the intent's name, the sender, and the data lines joined on one line with
// "; " (a template parameter may not hold a line break).
func Template(t *tenant.Template, intent, sender, lines string) *graph.Message {
	data := strings.ReplaceAll(lines, "\n", "; ")
	params := make([]graph.Parameter, 0, 3)
	for _, v := range []string{intent, sender, data} {
		params = append(params, graph.Parameter{Type: "text", Text: param(v)})
	}
	return &graph.Message{Type: "template", Template: &graph.Template{
		Name: t.Name, Language: graph.Language{Code: t.Language},
		Components: []graph.Component{{Type: "body", Parameters: params}},
	}}
}

// Sender names the person who asked, in language lang, as a member may trust it: what wapipe
// knows of them (their role in the tenant, or "not a member", and the last four digits of their
// number, else their username or a masked reference) beside the name they gave. A profile name is
// anyone's to choose ("Pak Agus (owner)"), so it is shown as data: quoted, with escapes for
// what is not printable (a line break, a direction override). Never their whole number nor their
// business-scoped user id.
func Sender(from actioncall.From, lang string) string {
	ref := tenant.MemberLabel(tenant.Member{WaID: from.WaID, UserID: from.UserID})
	if from.WaID == "" && from.Username != "" {
		ref = "@" + strings.TrimPrefix(from.Username, "@")
	}
	role := from.Role
	if role == "" {
		role = i18n.Text(lang, i18n.NotAMember)
	}
	name := strings.TrimSpace(from.Name)
	if name == "" {
		return ref + " (" + role + ")"
	}
	return strconv.Quote(name) + " (" + role + ", " + ref + ")"
}

// param makes v a valid template parameter: Meta refuses a parameter with a line break, a tab
// or more than four spaces in a row (132018), or an empty one; it is cut to maxParam.
func param(v string) string {
	v = strings.Join(strings.Fields(v), " ")
	if v == "" {
		v = "-"
	}
	return graph.Clip(v, maxParam)
}
