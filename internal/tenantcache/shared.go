package tenantcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// SharedStore reads and changes who a contact is on a shared number; *store.Tenants implements
// it.
type SharedStore interface {
	NumberUse(ctx context.Context, phoneNumberID string) (tenant.NumberUse, error)
	SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, person contact.Identity) (store.SharedContact, error)
	InviteTenant(ctx context.Context, tenantIDs []string, codeHash string, person contact.Identity) (string, error)
	RedeemSharedInvite(ctx context.Context, id, phoneNumberID, codeHash string, c store.Contact, name string) (tenant.Member, error)
}

// ContactRouter decides the tenant of a message on a shared number, where the contact, not the
// number, decides: an invite code of one of the number's tenants → that tenant; else the tenant
// the contact last chose there with a code, while it is still that tenant's member; else the
// first tenant by id the contact is a member of (by file or invite); else the number's first
// tenant by id, whose onboarding prompt (in its language, under its sender limits) answers. The
// contact is known by any of its identifiers: a phone, a BSUID, or both.
//
// A contact's route is cached per instance for the tenant cache's ttl, like the tenants
// themselves, so a routed message costs no read while the contact writes; a code redeemed
// through RedeemSharedInvite forgets the contact's routes at once here (another instance
// follows within the ttl). Only a message that is an invite code reads the invites.
type ContactRouter struct {
	store   SharedStore
	tenants *TenantCache
	numbers *cache[tenant.NumberUse]
	routes  *cache[string]
}

// NewContactRouter returns a router over s that reads the tenants' file members from tenants,
// its entries living ttl (TenantCacheTTL when zero).
func NewContactRouter(s SharedStore, tenants *TenantCache, ttl time.Duration) *ContactRouter {
	if ttl <= 0 {
		ttl = TenantCacheTTL
	}
	notFound := func(err error) bool { return errors.Is(err, store.ErrNotFound) }
	return &ContactRouter{store: s, tenants: tenants, numbers: newCache(ttl, s.NumberUse, notFound), routes: newCache[string](ttl, nil, nil)}
}

// NumberTenants returns the tenants that list phoneNumberID, sorted (store.ErrNotFound for
// none).
func (c *ContactRouter) NumberTenants(ctx context.Context, phoneNumberID string) ([]string, error) {
	u, err := c.numbers.get(ctx, phoneNumberID)
	return u.TenantIDs, err
}

// TenantFor returns the tenant of a message from person on the shared number phoneNumberID;
// codeHash is tenant.InviteCodeHash of the message when it is exactly an invite code, else "".
// store.ErrNotFound when no tenant lists the number.
func (c *ContactRouter) TenantFor(ctx context.Context, phoneNumberID string, person contact.Identity, codeHash string) (string, error) {
	u, err := c.numbers.get(ctx, phoneNumberID)
	if err != nil {
		return "", err
	}
	if len(u.TenantIDs) == 0 {
		return "", store.ErrNotFound
	}
	if person.IsZero() {
		// Nobody to route by: the number's primary tenant records it.
		return strangersTenant(u), nil
	}
	if codeHash != "" {
		id, err := c.store.InviteTenant(ctx, u.TenantIDs, codeHash, person)
		if err != nil {
			return "", fmt.Errorf("find the invite's tenant: %w", err)
		}
		if id != "" {
			return id, nil
		}
	}
	return c.routes.getWith(ctx, routeKey(phoneNumberID, person), func(ctx context.Context, _ string) (string, error) {
		return c.memberRoute(ctx, phoneNumberID, u, person)
	})
}

// memberRoute is the tenant of a contact on a shared number by membership (TenantFor).
func (c *ContactRouter) memberRoute(ctx context.Context, phoneNumberID string, u tenant.NumberUse, person contact.Identity) (string, error) {
	ids := u.TenantIDs
	sc, err := c.store.SharedContact(ctx, phoneNumberID, ids, person)
	if err != nil {
		return "", err
	}
	// The file lists a person by phone or by BSUID: what any tenant knows of them finds them.
	known := person
	for _, ct := range sc.Contacts {
		known = ct.Identity.Merge(known)
	}
	isMember := func(id string) (bool, error) {
		if slices.Contains(sc.Joined, id) {
			return true, nil
		}
		rec, err := c.tenants.Tenant(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read tenant %s: %w", id, err)
		}
		who := known
		if ct, ok := sc.Contacts[id]; ok {
			who = ct.Identity.Merge(person)
		}
		_, ok := rec.Tenant.MemberOf(who)
		return ok, nil
	}
	if slices.Contains(ids, sc.Chosen) {
		ok, err := isMember(sc.Chosen)
		if err != nil || ok {
			return sc.Chosen, err
		}
	}
	for _, id := range ids {
		ok, err := isMember(id)
		if err != nil || ok {
			return id, err
		}
	}
	return strangersTenant(u), nil
}

// strangersTenant is the tenant of a shared number that strangers' messages go to: the one whose
// entry says primary: true. A number shared before primary existed has none until its tenants'
// next apply, which requires one (tenant.CheckNumbers): until then its first tenant, as before.
func strangersTenant(u tenant.NumberUse) string {
	if u.Primary != "" && slices.Contains(u.TenantIDs, u.Primary) {
		return u.Primary
	}
	return u.TenantIDs[0]
}

// RedeemSharedInvite redeems an invite for a contact writing on phoneNumberID (on a shared
// number the choice is recorded there) and forgets the contact's cached routes.
func (c *ContactRouter) RedeemSharedInvite(ctx context.Context, id, phoneNumberID, codeHash string, ct store.Contact, name string) (tenant.Member, error) {
	m, err := c.store.RedeemSharedInvite(ctx, id, phoneNumberID, codeHash, ct, name)
	if err == nil {
		keys := ct.Identity.Keys()
		c.routes.forget(func(key string) bool {
			return slices.ContainsFunc(keys, func(k contact.Key) bool { return strings.Contains(key, routePart(k)) })
		})
	}
	return m, err
}

// routeKey keys a person's route on a number: the number, then each identifier.
func routeKey(phoneNumberID string, person contact.Identity) string {
	key := phoneNumberID
	for _, k := range person.Keys() {
		key += routePart(k)
	}
	return key
}

func routePart(k contact.Key) string { return "\x00" + string(k.Kind) + "=" + k.Value + "\x00" }
