package delivery

import (
	"context"
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/tenant"
)

// reengageTemplate is the tenant's reengage template as Meta's send body, its components'
// {{contact_name}} filled with name.
func reengageTemplate(tpl *tenant.Template, name string) *graph.Template {
	t := &graph.Template{Name: tpl.Name, Language: graph.Language{Code: tpl.Language}}
	for _, c := range tpl.Components {
		gc := graph.Component{Type: c.Type, SubType: c.SubType, Index: c.Index}
		for _, p := range c.Parameters {
			gc.Parameters = append(gc.Parameters, graph.Parameter{Type: p.Type, ParameterName: p.ParameterName,
				Text: strings.ReplaceAll(p.Text, tenant.ContactNamePlaceholder, name), Payload: p.Payload})
		}
		t.Components = append(t.Components, gc)
	}
	return t
}

// needsContactName reports whether tpl's components name the contact.
func needsContactName(tpl *tenant.Template) bool {
	for _, c := range tpl.Components {
		for _, p := range c.Parameters {
			if strings.Contains(p.Text, tenant.ContactNamePlaceholder) {
				return true
			}
		}
	}
	return false
}

// contactName is how a template names the contact req goes to: the profile name Meta last sent
// with their messages (known is the conversation's, when the caller has read it), else the
// member's name in the tenant file, else a localized "customer" (a text parameter may not be
// empty).
func (d *Deliverer) contactName(ctx context.Context, req Request, tn *tenant.Tenant, known string) string {
	if known != "" {
		return known
	}
	if d.Windows != nil && req.ConversationID != "" {
		// The name is a courtesy: on a failed read the template still goes, with the fallback.
		conv, err := d.Windows.Get(ctx, req.ConversationID)
		if err == nil && conv.ContactName != "" {
			return conv.ContactName
		}
	}
	m, _ := tn.MemberOf(contact.Identity{WaID: req.To, UserID: req.Recipient})
	if m.Name != "" {
		return m.Name
	}
	return i18n.Text(tn.EffectiveLanguage(m), i18n.ContactFallback)
}
