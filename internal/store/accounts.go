package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
)

// TenantAccounts keeps what Meta says of the tenants' WhatsApp Business Accounts: the account
// status its account_update webhooks leave on each tenant, and the accounts an Embedded Signup
// login granted beyond the tenant's (waba_grants) until an operator approves them.
type TenantAccounts struct{ tenantBase }

// AccountStatus is what Meta's account_update webhooks last said about a tenant's WhatsApp
// Business Account (the tenant document's account_status).
type AccountStatus struct {
	// Restricted is true while an event that stops the tenant's messaging holds (a restriction,
	// a violation, the account disabled, wapipe's partner access removed).
	Restricted bool `firestore:"restricted" json:"restricted"`
	// Event is Meta's event (ACCOUNT_RESTRICTION, ...) and Detail what it restricts.
	Event  string    `firestore:"event" json:"event"`
	Detail string    `firestore:"detail" json:"detail"`
	WABAID string    `firestore:"waba_id" json:"waba_id"`
	At     time.Time `firestore:"at" json:"at"`
}

// String says what the status is, for health and tenants show: "ACCOUNT_RESTRICTION
// (RESTRICTED_BIZ_INITIATED_MESSAGING) since ...".
func (a AccountStatus) String() string {
	if a.Event == "" {
		return "ok"
	}
	s := a.Event
	if a.Detail != "" {
		s += " (" + a.Detail + ")"
	}
	if !a.Restricted {
		s += ", lifted"
	}
	return s + " at " + a.At.UTC().Format(time.RFC3339)
}

// AccountEffect says what an account_update does to the tenant's messaging: restricts it, lifts
// an earlier restriction, or neither (recorded in the log only).
func AccountEffect(event, detail string) (restricts, lifts bool) {
	switch event {
	case "ACCOUNT_VIOLATION", "PARTNER_REMOVED":
		return true, false
	case "ACCOUNT_RESTRICTION":
		// Meta sends the update again with no restriction left when one is lifted.
		return detail != "", detail == ""
	case "DISABLED_UPDATE":
		return detail != "REINSTATE", detail == "REINSTATE"
	}
	return false, false
}

// TenantsByWABA returns the ids of the tenants with a number of WhatsApp Business Account
// wabaID (several when a number is shared), sorted. One query.
func (s *TenantAccounts) TenantsByWABA(ctx context.Context, wabaID string) ([]string, error) {
	if wabaID == "" {
		return nil, nil
	}
	snaps, err := s.fs.Collection(PhoneNumbers).Where("waba_id", "==", wabaID).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("tenants of WABA: %w", err)
	}
	var ids []string
	for _, sn := range snaps {
		var n numberDoc
		if err := sn.DataTo(&n); err != nil {
			return nil, fmt.Errorf("decode phone number: %w", err)
		}
		for _, id := range n.tenants() {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// RecordAccountUpdate records an account_update about wabaID on every tenant owning the WABA,
// when it restricts or lifts (AccountEffect); another event changes nothing. It returns the
// tenants it recorded on (none when no tenant owns the WABA). One query and a write per tenant.
func (s *TenantAccounts) RecordAccountUpdate(ctx context.Context, wabaID, event, detail string) ([]string, error) {
	restricts, lifts := AccountEffect(event, detail)
	if !restricts && !lifts {
		return nil, nil
	}
	ids, err := s.TenantsByWABA(ctx, wabaID)
	if err != nil {
		return nil, err
	}
	st := AccountStatus{Restricted: restricts, Event: event, Detail: detail, WABAID: wabaID, At: s.now()}
	for _, id := range ids {
		if _, err := s.tenantDoc(id).Update(ctx, []firestore.Update{{Path: "account_status", Value: st}}); err != nil {
			return nil, fmt.Errorf("record account update on %s: %w", id, err)
		}
	}
	return ids, nil
}

// RestrictedAccounts names the tenants whose account is restricted, each as "id: status", sorted
// by id: health reports them as degraded. One query.
func (s *TenantAccounts) RestrictedAccounts(ctx context.Context) ([]string, error) {
	snaps, err := s.fs.Collection(TenantsCollection).Where("account_status.restricted", "==", true).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list restricted accounts: %w", err)
	}
	out := make([]string, 0, len(snaps))
	for _, sn := range snaps {
		var d tenantDoc
		if err := sn.DataTo(&d); err != nil {
			return nil, fmt.Errorf("decode tenant %s: %w", sn.Ref.ID, err)
		}
		out = append(out, sn.Ref.ID+": "+d.Account.String())
	}
	slices.Sort(out)
	return out, nil
}
