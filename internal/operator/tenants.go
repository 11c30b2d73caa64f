package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// TenantStore is what the tenant operations need of store.Tenants.
type TenantStore interface {
	Apply(ctx context.Context, t *tenant.Tenant, dryRun bool) (store.TenantApplyResult, error)
	Get(ctx context.Context, id string) (store.TenantRecord, error)
	List(ctx context.Context) ([]store.TenantRecord, error)
	SetAccessToken(ctx context.Context, id string, ciphertext []byte) (store.TenantRecord, error)
	CreateInvite(ctx context.Context, id, codeHash string, role tenant.Role, expireAt time.Time) error
	NumberUse(ctx context.Context, phoneNumberID string) (tenant.NumberUse, error)
	SharedContact(ctx context.Context, phoneNumberID string, tenantIDs []string, person contact.Identity) (store.SharedContact, error)
}

// QueueEnsurer makes a queue exist as defined (taskqueue.Admin).
type QueueEnsurer interface {
	EnsureQueue(ctx context.Context, q tasks.Queue) (created, updated bool, err error)
}

// Sealer encrypts a secret bound to its associated data (secrets.Keeper).
type Sealer interface {
	Encrypt(ctx context.Context, plaintext, ad []byte) ([]byte, error)
}

// TokenVerifier says whether Meta accepts an access token; nil error means it does.
type TokenVerifier func(ctx context.Context, token string) error

// Tenants are the operations of `wapipe tenants`. Queues, Sealer and Verify are needed only by
// the operations that use them (apply, set-token).
type Tenants struct {
	Store  TenantStore
	Queues QueueEnsurer
	// QueueFile holds the tenant-outbound template; tasks.DefaultQueues() when nil.
	QueueFile *tasks.QueueFile
	Sealer    Sealer
	Verify    TokenVerifier
	// Keys lists and revokes API keys (api-keys, revoke-key).
	Keys APIKeyAdmin
	// Now is time.Now when nil.
	Now func() time.Time
	// Dev (APP_ENV=dev) lets apply accept an action URL on loopback over http, as the local
	// stack needs. Otherwise (staging, prod: the zero value) apply refuses an action URL that
	// is not https:// to a public address, the name resolved with Resolver
	// (net.DefaultResolver when nil).
	Dev      bool
	Resolver actioncall.Resolver
}

// ApplyReport is what an apply did (or, dry, would do).
type ApplyReport struct {
	ID      string
	DryRun  bool
	Created bool
	Version int64
	Changes []tenant.Change
	// Queue is the tenant's send queue; QueueCreated or QueueUpdated when apply changed it.
	Queue                      tasks.Queue
	QueueCreated, QueueUpdated bool
	// Suspended are the file's members listed by a phone whose owner changed number: their
	// entry does not count until the file lists them by their new number or user_id.
	Suspended []tenant.Member
}

// Warnings are what the operator should fix in the file: one line each.
func (r ApplyReport) Warnings() []string {
	var out []string
	for _, m := range r.Suspended {
		out = append(out, fmt.Sprintf("warning: member %s changed number: this entry is suspended (the number may be given to someone else); list them by their new number or their user_id", tenant.MemberLabel(m)))
	}
	return out
}

// Lines renders the report one change a line, or "no change".
func (r ApplyReport) Lines() []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.String())
	}
	rate := fmt.Sprintf("%s (%g/s, %d concurrent)", r.Queue.ID, r.Queue.RateLimits.MaxDispatchesPerSecond, r.Queue.RateLimits.MaxConcurrentDispatches)
	switch {
	case r.QueueCreated:
		out = append(out, "+ queue: "+rate)
	case r.QueueUpdated:
		out = append(out, "~ queue: "+rate)
	}
	if len(out) == 0 {
		return []string{"no change"}
	}
	return out
}

// Changed reports whether the apply changed anything.
func (r ApplyReport) Changed() bool { return len(r.Changes) > 0 || r.QueueCreated || r.QueueUpdated }

// Apply reads a tenant file and creates or updates the tenant, then its send queue. A file with
// problems (tenant.Problems: unknown keys, bad values, numbers another tenant owns) writes
// nothing. The tenant is written before its queue, so an apply interrupted in between is
// finished by running it again (the tenant is then unchanged and the queue made). With dryRun
// nothing is written and the queue is not touched.
func (o *Tenants) Apply(ctx context.Context, file []byte, dryRun bool) (ApplyReport, error) {
	return o.ApplyWith(ctx, file, ApplyOptions{DryRun: dryRun})
}

// ApplyOptions are apply's flags: --dry-run, --allow-shared-member.
type ApplyOptions struct {
	DryRun bool
	// AllowSharedMember lets the file list a member who is already a member of another tenant
	// on a shared number the file lists (checkSharedMembers).
	AllowSharedMember bool
}

// ApplyWith is Apply with its options.
func (o *Tenants) ApplyWith(ctx context.Context, file []byte, opts ApplyOptions) (ApplyReport, error) {
	dryRun := opts.DryRun
	t, err := tenant.Parse(file)
	if err != nil {
		return ApplyReport{}, err
	}
	if err := o.checkActionURL(ctx, t); err != nil {
		return ApplyReport{}, err
	}
	if !opts.AllowSharedMember {
		if err := o.checkSharedMembers(ctx, t); err != nil {
			return ApplyReport{}, err
		}
	}
	res, err := o.Store.Apply(ctx, t, dryRun)
	if err != nil {
		return ApplyReport{}, err
	}
	qf := o.QueueFile
	if qf == nil {
		qf = tasks.DefaultQueues()
	}
	rep := ApplyReport{ID: t.ID, DryRun: dryRun, Created: res.Created, Version: res.Version, Changes: res.Changes,
		Queue: qf.TenantQueue(t.ID, t.Sending), Suspended: res.Suspended}
	if dryRun || o.Queues == nil {
		return rep, nil
	}
	rep.QueueCreated, rep.QueueUpdated, err = o.Queues.EnsureQueue(ctx, rep.Queue)
	if err != nil {
		return rep, fmt.Errorf("tenant %s stored, but its send queue is not ready (run apply again): %w", t.ID, err)
	}
	return rep, nil
}

// checkSharedMembers refuses a file that adds, as its member, a person who is already a member
// of another tenant on a shared number the file lists (by that tenant's file, or by its invite
// code there): on a shared number a file could otherwise claim another business's people, whose
// messages, action data and window would follow. One line per such member, naming the other
// tenant; --allow-shared-member lets an operator who knows list them anyway (the person's choice
// of tenant on the number, by code, still routes).
func (o *Tenants) checkSharedMembers(ctx context.Context, t *tenant.Tenant) error {
	// A member the tenant's stored file lists already is not being added: re-applying a file
	// keeps it, even once the person has joined another tenant there by code.
	prev, err := o.Store.Get(ctx, t.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read tenant %s: %w", t.ID, err)
	}
	var ps tenant.Problems
	for _, p := range t.PhoneNumbers {
		if !p.Shared {
			continue
		}
		u, err := o.Store.NumberUse(ctx, p.PhoneNumberID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read shared number %s: %w", p.PhoneNumberID, err)
		}
		others, err := o.otherTenants(ctx, u.TenantIDs, t.ID)
		if err != nil {
			return err
		}
		for i, m := range t.Members {
			if prev.Tenant != nil {
				if _, listed := prev.Tenant.MemberOf(m.Identity()); listed {
					continue
				}
			}
			other, err := o.memberElsewhere(ctx, p.PhoneNumberID, others, m.Identity())
			if err != nil {
				return err
			}
			if other != "" {
				ps = append(ps, tenant.Problem{Path: fmt.Sprintf("members[%d]", i), Message: fmt.Sprintf(
					"%s is already a member of tenant %s on shared number %s: list them only with --allow-shared-member",
					tenant.MemberLabel(m), other, p.PhoneNumberID)})
			}
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// otherTenants reads the tenants ids lists but self, once for all of a file's members; a tenant
// gone meanwhile is left out.
func (o *Tenants) otherTenants(ctx context.Context, ids []string, self string) ([]*tenant.Tenant, error) {
	var out []*tenant.Tenant
	for _, id := range ids {
		if id == self {
			continue
		}
		rec, err := o.Store.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read tenant %s: %w", id, err)
		}
		out = append(out, rec.Tenant)
	}
	return out, nil
}

// memberElsewhere is the first of the tenants others whose member person is on the shared number
// phoneNumberID, by invite there or by file; "" when none.
func (o *Tenants) memberElsewhere(ctx context.Context, phoneNumberID string, others []*tenant.Tenant, person contact.Identity) (string, error) {
	if len(others) == 0 {
		return "", nil
	}
	ids := make([]string, len(others))
	for i, tn := range others {
		ids[i] = tn.ID
	}
	sc, err := o.Store.SharedContact(ctx, phoneNumberID, ids, person)
	if err != nil {
		return "", fmt.Errorf("read the members of shared number %s: %w", phoneNumberID, err)
	}
	if len(sc.Joined) > 0 {
		return sc.Joined[0], nil
	}
	for _, tn := range others {
		if _, ok := tn.MemberOf(person); ok {
			return tn.ID, nil
		}
	}
	return "", nil
}

// checkActionURL refuses, outside dev, an action URL that is not https:// to a public address
// (one problem line). A name that does not resolve now is refused too: its calls would fail,
// and a name that resolves only inside a private network is what the check is for. Calls are
// checked again when made; this is the operator's early answer.
func (o *Tenants) checkActionURL(ctx context.Context, t *tenant.Tenant) error {
	u := t.Assistant.ActionURL
	if o.Dev || u == "" {
		return nil
	}
	if err := actioncall.CheckPublicURL(ctx, u, o.Resolver); err != nil {
		return tenant.Problems{{Path: "assistant.action_url",
			Message: "must be https:// to a public address outside dev: " + err.Error()}}
	}
	return nil
}

// List returns every tenant, by id.
func (o *Tenants) List(ctx context.Context) ([]store.TenantRecord, error) { return o.Store.List(ctx) }

func (o *Tenants) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// APIKeyAdmin lists and revokes API keys; *store.APIKeys implements it.
type APIKeyAdmin interface {
	ListAPIKeys(ctx context.Context, tenantID string) ([]store.APIKeyRecord, error)
	GetAPIKey(ctx context.Context, id string) (store.APIKeyRecord, error)
	RevokeAPIKey(ctx context.Context, id string) error
}

// API key states, as listed.
const (
	KeyActive  = "active"
	KeyRevoked = "revoked"
	KeyExpired = "expired"
)

// APIKeyInfo is what an operator sees of a key: never the key or its hash.
type APIKeyInfo struct {
	// Prefix names the key (apikey.DisplayPrefix): the start of the key itself.
	Prefix                                      string
	State                                       string
	CreatedAt, LastUsedAt, ExpiresAt, RevokedAt time.Time
}

// KeyInfo describes rec at now.
func KeyInfo(rec store.APIKeyRecord, now time.Time) APIKeyInfo {
	info := APIKeyInfo{Prefix: apikey.DisplayPrefix(rec.ID), State: KeyActive, CreatedAt: rec.CreatedAt,
		LastUsedAt: rec.LastUsedAt, ExpiresAt: rec.ExpiresAt, RevokedAt: rec.RevokedAt}
	switch {
	case rec.Revoked():
		info.State = KeyRevoked
	case rec.Expired(now):
		info.State = KeyExpired
	}
	return info
}

// APIKeys lists tenant id's keys, oldest first, revoked and expired ones included.
func (o *Tenants) APIKeys(ctx context.Context, id string) ([]APIKeyInfo, error) {
	if _, err := o.Show(ctx, id); err != nil {
		return nil, err
	}
	return ListTenantKeys(ctx, o.Keys, id, o.now())
}

// RevokeAPIKey revokes tenant id's key named prefix, as RevokeTenantKey does.
func (o *Tenants) RevokeAPIKey(ctx context.Context, id, prefix string) (APIKeyInfo, error) {
	if _, err := o.Show(ctx, id); err != nil {
		return APIKeyInfo{}, err
	}
	return RevokeTenantKey(ctx, o.Keys, id, prefix, o.now())
}

// ListTenantKeys lists tenantID's keys as they stand at now, oldest first (the CLI and the
// console show the same).
func ListTenantKeys(ctx context.Context, keys APIKeyAdmin, tenantID string, now time.Time) ([]APIKeyInfo, error) {
	recs, err := keys.ListAPIKeys(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]APIKeyInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, KeyInfo(r, now))
	}
	return out, nil
}

// KeyError is a revoke refused: not a key prefix, or not a key of the tenant. Its text is for
// the operator (it names no secret).
type KeyError struct{ msg string }

func (e *KeyError) Error() string { return e.msg }

// UserMessage is the text to show the operator.
func (e *KeyError) UserMessage() string { return e.msg }

// RevokeTenantKey revokes tenantID's key named prefix (apikey.DisplayPrefix, or the bare key id):
// the api refuses it from the next request. A key of another tenant is "no such key", so a typo
// in the tenant id never revokes someone else's key. Revoking a revoked key changes nothing.
func RevokeTenantKey(ctx context.Context, keys APIKeyAdmin, tenantID, prefix string, now time.Time) (APIKeyInfo, error) {
	keyID, ok := apikey.IDFromPrefix(prefix)
	if !ok {
		// The input is not echoed: it may be a whole key pasted by mistake.
		return APIKeyInfo{}, &KeyError{fmt.Sprintf("not a key prefix: want %s followed by 16 hex digits, as api-keys lists", apikey.Prefix)}
	}
	rec, err := keys.GetAPIKey(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.TenantID != tenantID) {
		return APIKeyInfo{}, &KeyError{fmt.Sprintf("tenant %s has no key %s", tenantID, apikey.DisplayPrefix(keyID))}
	}
	if err != nil {
		return APIKeyInfo{}, err
	}
	if err := keys.RevokeAPIKey(ctx, keyID); err != nil {
		return APIKeyInfo{}, err
	}
	if rec, err = keys.GetAPIKey(ctx, keyID); err != nil {
		return APIKeyInfo{}, err
	}
	return KeyInfo(rec, now), nil
}

// Show returns one tenant; an error saying so when there is none.
func (o *Tenants) Show(ctx context.Context, id string) (store.TenantRecord, error) {
	rec, err := o.Store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return rec, fmt.Errorf("no tenant %q", id)
	}
	return rec, err
}

// SetToken checks token with Meta (unless verify is false: the operator vouches for it),
// encrypts it for tenant id and stores it; the tenant's auth_status becomes ok. A trailing
// newline (from stdin) is ignored; the token is never logged or returned.
func (o *Tenants) SetToken(ctx context.Context, id, token string, verify bool) (store.TenantRecord, error) {
	token = strings.TrimRight(token, "\r\n")
	if token == "" {
		return store.TenantRecord{}, errors.New("no token on stdin")
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return store.TenantRecord{}, errors.New("the token has spaces or several lines: give one token on stdin")
	}
	if _, err := o.Show(ctx, id); err != nil {
		return store.TenantRecord{}, err
	}
	if verify {
		if o.Verify == nil {
			return store.TenantRecord{}, errors.New("no way to verify the token: use --no-verify to vouch for it")
		}
		if err := o.Verify(ctx, token); err != nil {
			return store.TenantRecord{}, err
		}
	}
	sealed, err := o.Sealer.Encrypt(ctx, []byte(token), secrets.AD(id, secrets.PurposeAccessToken))
	if err != nil {
		return store.TenantRecord{}, fmt.Errorf("encrypt token: %w", err)
	}
	return o.Store.SetAccessToken(ctx, id, sealed)
}

// Invite creates a one-time invite code to tenant id for role (member when empty), valid
// tenant.InviteTTL. The code is returned once and only its hash is stored.
func (o *Tenants) Invite(ctx context.Context, id string, role tenant.Role) (code string, expireAt time.Time, err error) {
	if role == "" {
		role = tenant.DefaultRole
	}
	if !slices.Contains([]tenant.Role{tenant.RoleOwner, tenant.RoleAdmin, tenant.RoleMember}, role) {
		return "", time.Time{}, fmt.Errorf("role %q: want owner, admin or member", role)
	}
	if _, err := o.Show(ctx, id); err != nil {
		return "", time.Time{}, err
	}
	code, err = tenant.NewInviteCode()
	if err != nil {
		return "", time.Time{}, err
	}
	expireAt = o.now().Add(tenant.InviteTTL).UTC().Truncate(time.Second)
	if err := o.Store.CreateInvite(ctx, id, tenant.InviteCodeHash(code), role, expireAt); err != nil {
		return "", time.Time{}, err
	}
	return code, expireAt, nil
}

// GraphTokenVerifier checks tokens with Graph's debug_token at baseURL (GRAPH_API_BASE_URL): the
// token must be valid and allowed to send WhatsApp messages.
func GraphTokenVerifier(baseURL string) TokenVerifier {
	return func(ctx context.Context, token string) error {
		c, err := graph.NewClient(baseURL, token, nil)
		if err != nil {
			return err
		}
		info, err := c.DebugToken(ctx, token)
		var ge *graph.Error
		switch {
		case errors.As(err, &ge) && ge.Kind == graph.Auth:
			return fmt.Errorf("Meta refused the token (debug_token): %w", err)
		case err != nil:
			return fmt.Errorf("could not check the token with Meta (debug_token): %w", err)
		case !info.Valid:
			reason := "no reason given"
			if info.Error != nil {
				reason = fmt.Sprintf("code %d: %s", info.Error.Code, info.Error.Message)
			}
			return fmt.Errorf("the token is not valid (debug_token: %s)", reason)
		case !info.HasScope(graph.ScopeMessaging):
			return fmt.Errorf("the token lacks the %s permission (debug_token)", graph.ScopeMessaging)
		}
		return nil
	}
}

// WABAStore is what approve-waba needs of store.Tenants.
type WABAStore interface {
	Get(ctx context.Context, id string) (store.TenantRecord, error)
	CheckPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) error
	AddPhoneNumbers(ctx context.Context, id string, nums []tenant.PhoneNumber) ([]string, error)
	GetWABAGrant(ctx context.Context, id, waba string) (store.WABAGrant, error)
	ApproveWABAGrant(ctx context.Context, id, waba string) error
}

// Opener decrypts a secret bound to its associated data (secrets.Keeper).
type Opener interface {
	Decrypt(ctx context.Context, ciphertext, ad []byte) ([]byte, error)
}

// WABAApprover attaches a WhatsApp Business Account to a tenant on the operator's word: the
// only way, besides apply, that an account the tenant did not have gains its numbers
// (CONTRACT.md, Wave 3, Isolation between tenants).
type WABAApprover struct {
	Store  WABAStore
	Opener Opener
	// GraphURL is GRAPH_API_BASE_URL; HTTPClient is http.DefaultClient's settings when nil.
	GraphURL   string
	HTTPClient *http.Client
}

// ApproveReport is what approve-waba did.
type ApproveReport struct {
	ID, WABA string
	// Granted is when a login granted the account (zero: the operator attached it unasked).
	Granted time.Time
	// Numbers are the account's numbers; Added those new to the tenant.
	Numbers, Added []string
}

// Lines renders the report one change a line, or "no change".
func (r ApproveReport) Lines() []string {
	var out []string
	for _, n := range r.Added {
		out = append(out, fmt.Sprintf("+ phone_number: %s (waba %s)", n, r.WABA))
	}
	if len(out) == 0 {
		return []string{"no change"}
	}
	return out
}

// Approve attaches the account waba to tenant id with the tenant's stored token: the account's
// numbers are read from Graph, refused whole when another tenant owns one (nothing written, no
// subscription), then the app is subscribed to the account's webhooks and the numbers added. The
// account's grant, if a login recorded one, is marked approved.
func (a *WABAApprover) Approve(ctx context.Context, id, waba string) (ApproveReport, error) {
	rep := ApproveReport{ID: id, WABA: waba}
	if waba == "" || strings.ContainsAny(waba, "/?#") {
		return rep, fmt.Errorf("bad WhatsApp Business Account id %q", waba)
	}
	rec, err := a.Store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return rep, fmt.Errorf("no tenant %q", id)
	}
	if err != nil {
		return rep, err
	}
	if len(rec.AccessToken) == 0 {
		return rep, fmt.Errorf("tenant %s has no token: connect it or set-token first", id)
	}
	token, err := a.Opener.Decrypt(ctx, rec.AccessToken, secrets.AD(id, secrets.PurposeAccessToken))
	if err != nil {
		return rep, fmt.Errorf("decrypt the tenant's token: %w", err)
	}
	g, err := a.Store.GetWABAGrant(ctx, id, waba)
	switch {
	case err == nil:
		rep.Granted = g.GrantedAt
	case !errors.Is(err, store.ErrNotFound):
		return rep, err
	}
	gc, err := graph.NewClient(a.GraphURL, string(token), a.HTTPClient)
	if err != nil {
		return rep, err
	}
	pns, err := gc.PhoneNumbers(ctx, waba)
	if err != nil {
		return rep, fmt.Errorf("read the numbers of account %s with the tenant's token (does it manage the account?): %w", waba, err)
	}
	nums := make([]tenant.PhoneNumber, 0, len(pns))
	for _, p := range pns {
		nums = append(nums, tenant.PhoneNumber{PhoneNumberID: p.ID, WABAID: waba})
		rep.Numbers = append(rep.Numbers, p.ID)
	}
	if len(nums) == 0 {
		return rep, fmt.Errorf("account %s has no phone number: nothing to attach", waba)
	}
	// Shared numbers (one number, several tenants) come later: for now another tenant's number
	// refuses the account.
	if err := a.Store.CheckPhoneNumbers(ctx, id, nums); err != nil {
		return rep, err
	}
	if err := gc.SubscribeApp(ctx, waba); err != nil {
		return rep, fmt.Errorf("subscribe the app to account %s: %w", waba, err)
	}
	if rep.Added, err = a.Store.AddPhoneNumbers(ctx, id, nums); err != nil {
		return rep, err
	}
	if err := a.Store.ApproveWABAGrant(ctx, id, waba); err != nil {
		return rep, fmt.Errorf("numbers attached, but the grant is not marked approved (run approve-waba again): %w", err)
	}
	return rep, nil
}
