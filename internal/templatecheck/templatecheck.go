// Package templatecheck refuses, before a send reaches the outbox, a template Meta would refuse or
// that is not the tenant's to send: an authentication template with a code button sent by BSUID
// alone (Meta's 131062), another business's template on an account the tenant shares with it
// (CONTRACT.md, "Businesses sharing a number or an account"), and a template wapipe knows not to
// be approved. A template wapipe has no record of is sent, and Meta decides.
package templatecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Templates reads what wapipe knows of a tenant's template; *store.Templates implements it.
type Templates interface {
	Get(ctx context.Context, tenantID, name, language string) (store.Template, error)
	ForeignOwner(ctx context.Context, tenantID, wabaID, name string) (string, error)
}

// Tenants reads a tenant; the api's per-instance tenant cache implements it.
type Tenants interface {
	Tenant(ctx context.Context, id string) (store.TenantRecord, error)
}

// Checker checks template sends. With no Templates it checks nothing; with no Tenants, not
// whose template it is.
type Checker struct {
	Templates Templates
	Tenants   Tenants
}

// Check returns the refusal of tenantID's send of m from phoneNumberID ("" the tenant's only
// number) to the phone to ("" when sent by recipient, a BSUID), or nil; any other error is a
// store that could not answer.
func (c Checker) Check(ctx context.Context, tenantID, phoneNumberID, to string, m graph.Message) error {
	if m.Type != "template" || m.Template == nil || c.Templates == nil {
		return nil
	}
	t, err := c.Templates.Get(ctx, tenantID, m.Template.Name, m.Template.Language.Code)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case to == "" && graph.RequiresPhone(m, t.Category):
		return refusal.New(refusal.PhoneNumberRequired, fmt.Sprintf(
			"template %s (%s) is an authentication template: its code button goes only to a phone number, so send it with to (Meta refuses it by recipient, 131062)",
			t.Name, t.Language))
	}
	if err := c.ofAnother(ctx, tenantID, phoneNumberID, m.Template.Name); err != nil {
		return err
	}
	if err == nil && store.NotApproved(t.Status) {
		return refusal.New(refusal.TemplateNotApproved, fmt.Sprintf("template %s (%s) is %s at Meta: only an APPROVED template is sent",
			t.Name, t.Language, t.Status))
	}
	return nil
}

// ofAnother refuses, on a number whose account the tenant shares with other businesses, a
// template another of them created there and does not share (its templates.common): Meta would
// send it, with that business's words and name, from this tenant (403 forbidden).
func (c Checker) ofAnother(ctx context.Context, tenantID, phoneNumberID, name string) error {
	if c.Tenants == nil {
		return nil
	}
	rec, err := c.Tenants.Tenant(ctx, tenantID)
	if err != nil {
		return err
	}
	number, err := outbox.SenderNumber(rec.Tenant, phoneNumberID)
	if err != nil {
		return nil // not a number of the tenant's: the outbox refuses the send
	}
	waba := rec.Tenant.PhoneNumbers[slices.IndexFunc(rec.Tenant.PhoneNumbers, func(p tenant.PhoneNumber) bool { return p.PhoneNumberID == number })].WABAID
	if !rec.Tenant.SharesWABA(waba) {
		return nil
	}
	owner, err := c.Templates.ForeignOwner(ctx, tenantID, waba, name)
	if err != nil {
		return err
	}
	if owner != "" {
		return refusal.New(refusal.Forbidden, fmt.Sprintf(
			"template %s was created by another business on the account this number shares, which does not share it: it is not sent", name))
	}
	return nil
}
