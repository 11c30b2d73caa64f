package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/tenant"
)

// The tenants' collections. Tenants, their numbers and their members do not expire; invites do
// (expire_at, a TTL policy).
const (
	// TenantsCollection holds one document per tenant: the tenant file as applied plus runtime fields
	// (token, auth status) that apply never overwrites.
	TenantsCollection = "tenants"
	// PhoneNumbers is the routing index: phone_numbers/{phone_number_id} → its tenant.
	PhoneNumbers = "phone_numbers"
	// TenantMembers, under a tenant, holds the members who joined by invite, by contact id (ct_…;
	// before contacts, by phone), so that the next apply of the file (which lists its own
	// members) does not erase them.
	TenantMembers = "members"
	// TenantInvites, under a tenant, holds the one-time invite codes, by the sha256 of the code.
	TenantInvites = "invites"
)

// The values of TenantRecord.AuthStatus.
const (
	AuthOK          = "ok"
	AuthNeedsReauth = "needs_reauth"
	AuthNoToken     = "no_token"
)

// ErrInviteInvalid is returned by RedeemInvite for a code that is unknown (to this tenant), used
// or expired.
var ErrInviteInvalid = errors.New("invite code unknown, used or expired")

// TenantRecord is a tenant as stored: the file as last applied and the runtime fields.
type TenantRecord struct {
	Tenant *tenant.Tenant
	// AuthStatus is AuthOK, AuthNeedsReauth or AuthNoToken.
	AuthStatus    string
	AuthLastError string
	// AccessToken is the token's ciphertext (package secrets); nil when there is none.
	AccessToken []byte
	// TokenSetAt is when the token was stored; zero when there is none.
	TokenSetAt time.Time
	// ActionSecret is the action signing secret's ciphertext (package secrets); nil when
	// `wapipe tenants action-secret` never ran. ActionSecretSetAt is when it was stored.
	ActionSecret      []byte
	ActionSecretSetAt time.Time
	// Version counts the applies that changed the tenant, from 1.
	Version   int64
	AppliedAt time.Time
	UpdatedAt time.Time
	// Account is what Meta's last account_update about the tenant's WABA said (accounts.go).
	Account AccountStatus
	// Suspended are the members of the file whose entry no longer counts: listed by a phone
	// whose owner changed number (SuspendFileMember), which may be given to someone else. They
	// are not in Tenant.Members; the next apply that stops listing the phone lifts it.
	Suspended []tenant.Member
}

// tenantDoc is a tenants document: the tenant's file fields at the top level (the embedded
// Tenant), then the runtime fields.
type tenantDoc struct {
	tenant.Tenant
	AuthStatus    string    `firestore:"auth_status"`
	AuthLastError string    `firestore:"auth_last_error"`
	AccessToken   []byte    `firestore:"access_token"`
	TokenSetAt    time.Time `firestore:"token_set_at"`
	// ActionSecret is sealed like AccessToken, for secrets.PurposeActionSecret.
	ActionSecret      []byte        `firestore:"action_secret"`
	ActionSecretSetAt time.Time     `firestore:"action_secret_set_at"`
	Version           int64         `firestore:"version"`
	AppliedAt         time.Time     `firestore:"applied_at"`
	UpdatedAt         time.Time     `firestore:"updated_at"`
	Account           AccountStatus `firestore:"account_status"`
	// SuspendedPhones are the file members' phones suspended (TenantRecord.Suspended).
	SuspendedPhones []string `firestore:"suspended_phones,omitempty"`
}

func (d *tenantDoc) record() TenantRecord {
	t := d.Tenant
	var suspended []tenant.Member
	if len(d.SuspendedPhones) > 0 {
		// The file as applied stays whole in the document (Apply diffs against it); the tenant
		// the services see has no suspended member.
		t.Members = nil
		for _, m := range d.Tenant.Members {
			if m.WaID != "" && slices.Contains(d.SuspendedPhones, m.WaID) {
				suspended = append(suspended, m)
				continue
			}
			t.Members = append(t.Members, m)
		}
	}
	if len(d.AccessToken) == 0 {
		d.AccessToken = nil // Firestore gives an empty slice back for nil bytes
	}
	if len(d.ActionSecret) == 0 {
		d.ActionSecret = nil
	}
	return TenantRecord{
		Tenant: &t, AuthStatus: d.AuthStatus, AuthLastError: d.AuthLastError, AccessToken: d.AccessToken,
		TokenSetAt: d.TokenSetAt, ActionSecret: d.ActionSecret, ActionSecretSetAt: d.ActionSecretSetAt, Version: d.Version, AppliedAt: d.AppliedAt, UpdatedAt: d.UpdatedAt,
		Account: d.Account, Suspended: suspended,
	}
}

// numberDoc is a phone_numbers document. A shared number (shared.go) lists its tenants in
// TenantIDs, and TenantID is the first of them.
type numberDoc struct {
	TenantID  string    `firestore:"tenant_id"`
	WABAID    string    `firestore:"waba_id"`
	Shared    bool      `firestore:"shared,omitempty"`
	TenantIDs []string  `firestore:"tenant_ids,omitempty"`
	UpdatedAt time.Time `firestore:"updated_at"`
}

// inviteDoc is an invites document; the code itself is never stored.
type inviteDoc struct {
	Role      tenant.Role `firestore:"role"`
	CreatedAt time.Time   `firestore:"created_at"`
	ExpireAt  time.Time   `firestore:"expire_at"`
	UsedAt    time.Time   `firestore:"used_at,omitempty"`
	UsedBy    string      `firestore:"used_by,omitempty"`
}

// memberDoc is a members document: a member who joined by invite (or kept a file role after a
// change of number, InviteMovedNumber). The person is the contact; wa_id and user_id say who
// it was when they joined (documents from before contacts have wa_id alone, and are named
// after it).
type memberDoc struct {
	ContactID string      `firestore:"contact_id,omitempty"`
	WaID      string      `firestore:"wa_id"`
	UserID    string      `firestore:"user_id,omitempty"`
	Role      tenant.Role `firestore:"role"`
	Name      string      `firestore:"name"`
	Language  string      `firestore:"language"`
	JoinedAt  time.Time   `firestore:"joined_at"`
	// Invite is the hash of the code redeemed.
	Invite string `firestore:"invite"`
}

// Tenants keeps the tenants (tenants, phone_numbers, and their members and invites).
type Tenants struct {
	db  *DB
	fs  *firestore.Client
	now func() time.Time
}

// NewTenants returns the tenant store. Only opts.Now is used (tenants do not expire).
func NewTenants(db *DB, opts Options) *Tenants {
	return &Tenants{db: db, fs: db.fs, now: opts.withDefaults().Now}
}

// contacts is the contact store on the same database.
func (s *Tenants) contacts() *Contacts { return &Contacts{db: s.db, fs: s.fs, now: s.now} }

func (s *Tenants) tenantDoc(id string) *firestore.DocumentRef {
	return s.fs.Collection(TenantsCollection).Doc(id)
}

func (s *Tenants) numberDoc(id string) *firestore.DocumentRef {
	return s.fs.Collection(PhoneNumbers).Doc(id)
}

// TenantApplyResult is what Apply did (or, dry, would do).
type TenantApplyResult struct {
	// Changes are the lines of tenant.Diff; empty when nothing changed.
	Changes []tenant.Change
	// Created is true when the tenant did not exist.
	Created bool
	// Version is the tenant's version after the apply.
	Version int64
	// Suspended are the members the file lists by a phone that stays suspended (its owner
	// changed number): the file should list them by their new number or their user_id.
	Suspended []tenant.Member
}

// Apply creates or updates the tenant t (valid, as tenant.Parse returns it) in one transaction:
// the file fields replace the stored ones, the runtime fields (token, auth status) and the
// members who joined by invite are kept, the phone_numbers index gains the file's numbers and
// loses those the tenant no longer lists (a shared number loses the tenant from its tenants).
// A number another tenant owns, or shares otherwise than the file says (tenant.CheckNumbers),
// refuses the whole apply with tenant.Problems, one per number, and nothing is written. Applying what is stored already
// writes nothing. With dryRun nothing is written either, and the result says what would change.
func (s *Tenants) Apply(ctx context.Context, t *tenant.Tenant, dryRun bool) (TenantApplyResult, error) {
	if t == nil || t.ID == "" {
		return TenantApplyResult{}, errors.New("apply tenant: no tenant id")
	}
	ref := s.tenantDoc(t.ID)
	var res TenantApplyResult
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		now := s.now()
		prev, err := readTenantDoc(tx, ref)
		if err != nil {
			return err
		}
		current, owned, err := s.readApplyNumbers(tx, t)
		if err != nil {
			return err
		}
		res = applyResult(prev, t)
		plan, err := planNumberIndex(t, current, owned)
		if err != nil {
			return err
		}
		if dryRun || (len(res.Changes) == 0 && len(plan.sets) == 0 && len(plan.deletes) == 0) {
			return nil
		}
		if err := writeTenantDoc(tx, ref, prev, t, res, now); err != nil {
			return err
		}
		return s.writeNumberIndex(tx, plan, now)
	})
	if err != nil {
		var ps tenant.Problems
		if errors.As(err, &ps) {
			return TenantApplyResult{}, ps
		}
		return TenantApplyResult{}, fmt.Errorf("apply tenant %s: %w", t.ID, err)
	}
	return res, nil
}

// readTenantDoc reads the stored tenant of ref in tx; nil when there is none.
func readTenantDoc(tx *firestore.Transaction, ref *firestore.DocumentRef) (*tenantDoc, error) {
	snap, err := tx.Get(ref)
	switch {
	case status.Code(err) == codes.NotFound:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read tenant: %w", err)
	}
	prev := &tenantDoc{}
	if err := snap.DataTo(prev); err != nil {
		return nil, fmt.Errorf("decode tenant: %w", err)
	}
	return prev, nil
}

// readApplyNumbers reads, in tx, the index documents of t's numbers (current, by number) and
// those t lists now (owned). A number t may not list (another tenant's, or shared otherwise
// than t says) refuses the apply with tenant.Problems (tenant.CheckNumbers).
func (s *Tenants) readApplyNumbers(tx *firestore.Transaction, t *tenant.Tenant) (map[string]numberDoc, []*firestore.DocumentSnapshot, error) {
	refs := make([]*firestore.DocumentRef, 0, len(t.PhoneNumbers))
	for _, p := range t.PhoneNumbers {
		refs = append(refs, s.numberDoc(p.PhoneNumberID))
	}
	snaps, err := tx.GetAll(refs)
	if err != nil {
		return nil, nil, fmt.Errorf("read phone numbers: %w", err)
	}
	owned, err := s.ownedNumbers(tx, t.ID)
	if err != nil {
		return nil, nil, err
	}
	uses := map[string]tenant.NumberUse{}
	current := map[string]numberDoc{}
	for _, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		var n numberDoc
		if err := sn.DataTo(&n); err != nil {
			return nil, nil, fmt.Errorf("decode phone number: %w", err)
		}
		uses[sn.Ref.ID] = n.use()
		current[sn.Ref.ID] = n
	}
	if err := tenant.CheckNumbers(t, uses); err != nil {
		return nil, nil, err
	}
	return current, owned, nil
}

// applyResult says what applying t over prev (nil: none stored) changes, and the version after.
func applyResult(prev *tenantDoc, t *tenant.Tenant) TenantApplyResult {
	var prevTenant *tenant.Tenant
	if prev != nil {
		prevTenant = &prev.Tenant
	}
	res := TenantApplyResult{Changes: tenant.Diff(prevTenant, t), Created: prev == nil, Version: 1}
	if prev != nil {
		for _, m := range t.Members {
			if m.WaID != "" && slices.Contains(prev.SuspendedPhones, m.WaID) {
				res.Suspended = append(res.Suspended, m)
			}
		}
		res.Version = prev.Version
		if len(res.Changes) > 0 {
			res.Version++
		}
	}
	return res
}

// writeTenantDoc creates the tenant (prev nil) or replaces its file fields when res has changes.
func writeTenantDoc(tx *firestore.Transaction, ref *firestore.DocumentRef, prev *tenantDoc, t *tenant.Tenant, res TenantApplyResult, now time.Time) error {
	switch {
	case prev == nil:
		doc := tenantDoc{Tenant: *t, AuthStatus: AuthNoToken, Version: 1, AppliedAt: now, UpdatedAt: now}
		if err := tx.Create(ref, doc); err != nil {
			return fmt.Errorf("create tenant: %w", err)
		}
	case len(res.Changes) > 0:
		ups := fileUpdates(t)
		if len(prev.SuspendedPhones) > 0 {
			// A suspension lasts while the file lists the phone; a file that no longer does
			// lifts it.
			keep := []string{}
			for _, m := range res.Suspended {
				keep = append(keep, m.WaID)
			}
			ups = append(ups, firestore.Update{Path: "suspended_phones", Value: keep})
		}
		ups = append(ups,
			firestore.Update{Path: "version", Value: res.Version},
			firestore.Update{Path: "applied_at", Value: now},
			firestore.Update{Path: "updated_at", Value: now})
		if err := tx.Update(ref, ups); err != nil {
			return fmt.Errorf("update tenant: %w", err)
		}
	}
	return nil
}

// fileUpdates replaces every top-level file field of the stored tenant with t's, whole (a
// merge would keep keys the file no longer has), leaving the runtime fields alone. The fields
// come from tenant.Tenant's firestore tags, so a field added to the file is stored too.
func fileUpdates(t *tenant.Tenant) []firestore.Update {
	v := reflect.ValueOf(*t)
	typ := v.Type()
	ups := make([]firestore.Update, 0, typ.NumField())
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("firestore"), ",")
		if name == "" || name == "-" {
			continue
		}
		ups = append(ups, firestore.Update{Path: name, Value: v.Field(i).Interface()})
	}
	return ups
}

// Get returns the tenant id; ErrNotFound when there is none.
func (s *Tenants) Get(ctx context.Context, id string) (TenantRecord, error) {
	if id == "" {
		return TenantRecord{}, ErrNotFound
	}
	d, err := getDoc[tenantDoc](ctx, s.tenantDoc(id), "tenant")
	if err != nil {
		return TenantRecord{}, err
	}
	return d.record(), nil
}

// List returns every tenant, by id.
func (s *Tenants) List(ctx context.Context) ([]TenantRecord, error) {
	snaps, err := s.fs.Collection(TenantsCollection).OrderBy(firestore.DocumentID, firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]TenantRecord, 0, len(snaps))
	for _, sn := range snaps {
		var d tenantDoc
		if err := sn.DataTo(&d); err != nil {
			return nil, fmt.Errorf("decode tenant %s: %w", sn.Ref.ID, err)
		}
		out = append(out, d.record())
	}
	return out, nil
}

// GetByPhoneNumber returns the tenant that owns phoneNumberID (metadata.phone_number_id);
// ErrNotFound when no tenant does.
func (s *Tenants) GetByPhoneNumber(ctx context.Context, phoneNumberID string) (TenantRecord, error) {
	if phoneNumberID == "" || strings.Contains(phoneNumberID, "/") {
		return TenantRecord{}, ErrNotFound
	}
	n, err := getDoc[numberDoc](ctx, s.numberDoc(phoneNumberID), "phone number")
	if err != nil {
		return TenantRecord{}, err
	}
	rec, err := s.Get(ctx, n.TenantID)
	if err != nil {
		return TenantRecord{}, err
	}
	// The index and the tenant are written together, so they agree; this guards a hand edit.
	if !rec.Tenant.OwnsNumber(phoneNumberID) {
		return TenantRecord{}, ErrNotFound
	}
	return rec, nil
}

// SetAccessToken stores the tenant's token (ciphertext from package secrets), sets its
// auth_status to ok and clears auth_last_error. It returns the tenant as now stored;
// ErrNotFound when there is no such tenant.
func (s *Tenants) SetAccessToken(ctx context.Context, id string, ciphertext []byte) (TenantRecord, error) {
	if len(ciphertext) == 0 {
		return TenantRecord{}, errors.New("set access token: empty ciphertext")
	}
	if id == "" {
		return TenantRecord{}, ErrNotFound
	}
	ref := s.tenantDoc(id)
	var rec TenantRecord
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var d tenantDoc
		if err := snap.DataTo(&d); err != nil {
			return err
		}
		now := s.now()
		d.AccessToken, d.TokenSetAt, d.AuthStatus, d.AuthLastError, d.UpdatedAt = ciphertext, now, AuthOK, "", now
		rec = d.record()
		return tx.Update(ref, []firestore.Update{
			{Path: "access_token", Value: ciphertext},
			{Path: "token_set_at", Value: now},
			{Path: "auth_status", Value: AuthOK},
			{Path: "auth_last_error", Value: ""},
			{Path: "updated_at", Value: now},
		})
	})
	if errors.Is(err, ErrNotFound) {
		return TenantRecord{}, ErrNotFound
	}
	if err != nil {
		return TenantRecord{}, fmt.Errorf("set access token of %s: %w", id, err)
	}
	return rec, nil
}

// CreateInvite stores a one-time invite to tenant id with role, valid until expireAt, under the
// hash of its code (tenant.InviteCodeHash); ErrNotFound when there is no such tenant.
func (s *Tenants) CreateInvite(ctx context.Context, id, codeHash string, role tenant.Role, expireAt time.Time) error {
	if id == "" {
		return ErrNotFound
	}
	if codeHash == "" || !slices.Contains([]tenant.Role{tenant.RoleOwner, tenant.RoleAdmin, tenant.RoleMember}, role) {
		return fmt.Errorf("create invite: bad code hash or role %q", role)
	}
	ref := s.tenantDoc(id)
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if _, err := tx.Get(ref); status.Code(err) == codes.NotFound {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		return tx.Create(ref.Collection(TenantInvites).Doc(codeHash), inviteDoc{Role: role, CreatedAt: s.now(), ExpireAt: expireAt})
	})
	if errors.Is(err, ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("create invite to %s: %w", id, err)
	}
	return nil
}

// RedeemInvite uses the invite with codeHash to tenant id, in one transaction: the invite must
// exist under this tenant, be unused and unexpired; it is marked used by contact c, and c
// becomes a member (tenants/{id}/members/{c.ID}) with the invite's role and name.
// ErrInviteInvalid otherwise.
func (s *Tenants) RedeemInvite(ctx context.Context, id, codeHash string, c Contact, name string) (tenant.Member, error) {
	return s.redeemInvite(ctx, id, "", codeHash, c, name)
}

// memberRefs are the member documents of contact c in tenant id: its own, then, until the
// migration has run, the one named after its phone before contacts.
func (s *Tenants) memberRefs(ctx context.Context, id string, c Contact) []*firestore.DocumentRef {
	members := s.tenantDoc(id).Collection(TenantMembers)
	var refs []*firestore.DocumentRef
	if c.ID != "" && !strings.Contains(c.ID, "/") {
		refs = append(refs, members.Doc(c.ID))
	}
	if c.WaID != "" && !strings.Contains(c.WaID, "/") && s.db.legacyReads(ctx) {
		refs = append(refs, members.Doc(c.WaID))
	}
	return refs
}

// RuntimeMember returns contact c's membership of tenant id by invite, and whether there is
// one. The file's members are on the tenant itself (tenant.Tenant.MemberOf); look there first.
// One read.
func (s *Tenants) RuntimeMember(ctx context.Context, id string, c Contact) (tenant.Member, bool, error) {
	if id == "" || c.ID == "" || strings.Contains(c.ID, "/") {
		return tenant.Member{}, false, nil
	}
	snaps, err := s.fs.GetAll(ctx, s.memberRefs(ctx, id, c))
	if err != nil {
		return tenant.Member{}, false, fmt.Errorf("read member: %w", err)
	}
	for _, sn := range snaps {
		if !sn.Exists() {
			continue
		}
		var d memberDoc
		if err := sn.DataTo(&d); err != nil {
			return tenant.Member{}, false, fmt.Errorf("decode member: %w", err)
		}
		m := d.member()
		m.WaID, m.UserID = c.WaID, c.UserID
		return m, true, nil
	}
	return tenant.Member{}, false, nil
}

// GrantMember makes contact c a member of tenant id with m's role, name and language, by a
// member document marked invite (InviteMovedNumber: a file role kept after a change of number),
// unless c has a membership document already. It reports whether it wrote one. One transaction.
func (s *Tenants) GrantMember(ctx context.Context, id string, c Contact, m tenant.Member, invite string) (bool, error) {
	if id == "" || c.ID == "" || strings.Contains(c.ID, "/") {
		return false, fmt.Errorf("grant member: %w", errNoContact)
	}
	ref := s.tenantDoc(id).Collection(TenantMembers).Doc(c.ID)
	granted, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		if _, err := tx.Get(ref); err == nil {
			return false, nil
		} else if status.Code(err) != codes.NotFound {
			return false, err
		}
		return true, tx.Create(ref, memberDoc{ContactID: c.ID, WaID: c.WaID, UserID: c.UserID, Role: m.Role, Name: m.Name,
			Language: m.Language, JoinedAt: s.now(), Invite: invite})
	})
	if err != nil {
		return false, fmt.Errorf("grant member of %s: %w", id, err)
	}
	return granted, nil
}

// SuspendFileMember suspends the file's member listed by phone in tenant id (TenantRecord
// Suspended): its owner changed number, and the number may be given to someone else. It
// reports whether the file lists the phone and it was not suspended yet. The next apply that
// no longer lists the phone lifts the suspension.
func (s *Tenants) SuspendFileMember(ctx context.Context, id, phone string) (bool, error) {
	if id == "" || phone == "" {
		return false, nil
	}
	ref := s.tenantDoc(id)
	suspended, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		d, err := readTenantDoc(tx, ref)
		if err != nil || d == nil {
			return false, err
		}
		listed := slices.ContainsFunc(d.Tenant.Members, func(m tenant.Member) bool { return m.WaID == phone })
		if !listed || slices.Contains(d.SuspendedPhones, phone) {
			return false, nil
		}
		return true, tx.Update(ref, []firestore.Update{
			{Path: "suspended_phones", Value: firestore.ArrayUnion(phone)}, {Path: "updated_at", Value: s.now()},
		})
	})
	if err != nil {
		return false, fmt.Errorf("suspend a file member of %s: %w", id, err)
	}
	return suspended, nil
}
