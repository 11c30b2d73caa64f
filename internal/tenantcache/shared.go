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
	ChooseOnNumber(ctx context.Context, phoneNumberID, id string, person contact.Identity) error
}

// ContactRouter decides the tenant of a message on a shared number, where the contact, not the
// number, decides: an invite code of one of the number's tenants → that tenant; else the tenant
// the contact last chose there (with a code, or a tap on the list of Route.Ask), while it is
// still that tenant's member; else the one tenant the contact is a member of (by file or
// invite); a member of several with no choice is to be asked which one (Route.Ask); else the
// number's primary tenant, whose onboarding prompt (in its language, under its sender limits)
// answers. No tenant wins by its id. The contact is known by any of its identifiers: a phone, a
// BSUID, or both.
//
// A contact's route is cached per instance for the tenant cache's ttl, like the tenants
// themselves, so a routed message costs no read while the contact writes; a choice recorded
// through RedeemSharedInvite or Choose forgets the contact's routes at once here (another
// instance follows within the ttl). Only a message that is an invite code reads the invites.
type ContactRouter struct {
	store   SharedStore
	tenants *TenantCache
	numbers *cache[tenant.NumberUse]
	routes  *cache[Route]
}

// NewContactRouter returns a router over s that reads the tenants' file members from tenants,
// its entries living ttl (TenantCacheTTL when zero).
func NewContactRouter(s SharedStore, tenants *TenantCache, ttl time.Duration) *ContactRouter {
	if ttl <= 0 {
		ttl = TenantCacheTTL
	}
	notFound := func(err error) bool { return errors.Is(err, store.ErrNotFound) }
	return &ContactRouter{store: s, tenants: tenants, numbers: newCache(ttl, s.NumberUse, notFound), routes: newCache[Route](ttl, nil, nil)}
}

// NumberTenants returns the tenants that list phoneNumberID, sorted (store.ErrNotFound for
// none).
func (c *ContactRouter) NumberTenants(ctx context.Context, phoneNumberID string) ([]string, error) {
	u, err := c.numbers.get(ctx, phoneNumberID)
	return u.TenantIDs, err
}

// Route is where a message on a shared number goes: to Tenant, or, when Ask is set, to nobody
// yet: its sender is a member of several of the number's tenants and has chosen none, and is
// asked which one.
type Route struct {
	Tenant string
	Ask    *Question
}

// Question is the list a member of several tenants is asked with: sent by Host (the number's
// primary tenant: its token and language), one row per tenant of Choices.
type Question struct {
	Host    string
	Choices []Choice
}

// Choice is one tenant offered: its id (the row's id is ChoiceRowID of it) and its name.
type Choice struct{ ID, Name string }

// choiceRowPrefix starts the ids of the list's rows (CONTRACT.md: tenant:<id>).
const choiceRowPrefix = "tenant:"

// ChoiceRowID is the id of the list row that chooses tenant id.
func ChoiceRowID(id string) string { return choiceRowPrefix + id }

// ChosenTenant is the tenant a list reply's row id chooses; ok is false for any other id.
func ChosenTenant(rowID string) (string, bool) {
	id, ok := strings.CutPrefix(rowID, choiceRowPrefix)
	return id, ok && id != ""
}

// TenantFor returns the route of a message from person on the shared number phoneNumberID;
// codeHash is tenant.InviteCodeHash of the message when it is exactly an invite code, else "".
// store.ErrNotFound when no tenant lists the number.
func (c *ContactRouter) TenantFor(ctx context.Context, phoneNumberID string, person contact.Identity, codeHash string) (Route, error) {
	u, err := c.numbers.get(ctx, phoneNumberID)
	if err != nil {
		return Route{}, err
	}
	if len(u.TenantIDs) == 0 {
		return Route{}, store.ErrNotFound
	}
	if person.IsZero() {
		// Nobody to route by: the number's primary tenant records it.
		return Route{Tenant: strangersTenant(u)}, nil
	}
	if codeHash != "" {
		id, err := c.store.InviteTenant(ctx, u.TenantIDs, codeHash, person)
		if err != nil {
			return Route{}, fmt.Errorf("find the invite's tenant: %w", err)
		}
		if id != "" {
			return Route{Tenant: id}, nil
		}
	}
	return c.routes.getWith(ctx, routeKey(phoneNumberID, person), func(ctx context.Context, _ string) (Route, error) {
		return c.memberRoute(ctx, phoneNumberID, u, person)
	})
}

// Choose records that person chose tenant id on the shared number phoneNumberID by tapping its
// row, and forgets their cached routes; ok is false, and nothing is recorded, when id is not a
// tenant of the number that person is a member of (a forged or stale row).
func (c *ContactRouter) Choose(ctx context.Context, phoneNumberID string, person contact.Identity, id string) (ok bool, err error) {
	u, err := c.numbers.get(ctx, phoneNumberID)
	if err != nil || !slices.Contains(u.TenantIDs, id) || person.IsZero() {
		return false, err
	}
	_, members, err := c.memberships(ctx, phoneNumberID, u, person)
	if err != nil || !slices.Contains(members, id) {
		return false, err
	}
	if err := c.store.ChooseOnNumber(ctx, phoneNumberID, id, person); err != nil {
		return false, err
	}
	c.forget(person.Keys())
	return true, nil
}

// memberRoute is the route of a contact on a shared number by membership (TenantFor).
func (c *ContactRouter) memberRoute(ctx context.Context, phoneNumberID string, u tenant.NumberUse, person contact.Identity) (Route, error) {
	chosen, members, err := c.memberships(ctx, phoneNumberID, u, person)
	switch {
	case err != nil:
		return Route{}, err
	case chosen != "":
		return Route{Tenant: chosen}, nil
	case len(members) == 1:
		return Route{Tenant: members[0]}, nil
	case len(members) == 0:
		return Route{Tenant: strangersTenant(u)}, nil
	}
	q := &Question{Host: strangersTenant(u)}
	for _, id := range members {
		name := id
		if rec, err := c.tenants.Tenant(ctx, id); err == nil && rec.Tenant.Name != "" {
			name = rec.Tenant.Name
		}
		q.Choices = append(q.Choices, Choice{ID: id, Name: name})
	}
	return Route{Ask: q}, nil
}

// memberships are the tenants of the shared number that person is a member of, in the number's
// order, and the one they chose there while they are still its member ("" when none).
func (c *ContactRouter) memberships(ctx context.Context, phoneNumberID string, u tenant.NumberUse, person contact.Identity) (chosen string, members []string, err error) {
	ids := u.TenantIDs
	sc, err := c.store.SharedContact(ctx, phoneNumberID, ids, person)
	if err != nil {
		return "", nil, err
	}
	// The file lists a person by phone or by BSUID: what any tenant knows of them finds them.
	known := person
	for _, ct := range sc.Contacts {
		known = ct.Identity.Merge(known)
	}
	for _, id := range ids {
		ok := slices.Contains(sc.Joined, id)
		if !ok {
			rec, err := c.tenants.Tenant(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return "", nil, fmt.Errorf("read tenant %s: %w", id, err)
			}
			who := known
			if ct, found := sc.Contacts[id]; found {
				who = ct.Identity.Merge(person)
			}
			_, ok = rec.Tenant.MemberOf(who)
		}
		if ok {
			members = append(members, id)
		}
	}
	if slices.Contains(members, sc.Chosen) {
		chosen = sc.Chosen
	}
	return chosen, members, nil
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
		c.forget(ct.Identity.Keys())
	}
	return m, err
}

// forget drops the cached routes of the person known by keys.
func (c *ContactRouter) forget(keys []contact.Key) {
	c.routes.forget(func(key string) bool {
		return slices.ContainsFunc(keys, func(k contact.Key) bool { return strings.Contains(key, routePart(k)) })
	})
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
