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
	TenantID  string   `firestore:"tenant_id"`
	WABAID    string   `firestore:"waba_id"`
	Shared    bool     `firestore:"shared,omitempty"`
	TenantIDs []string `firestore:"tenant_ids,omitempty"`
	// Primary is the shared number's tenant that says primary: true ("" when none does).
	Primary   string    `firestore:"primary,omitempty"`
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

// Tenants is the whole tenant store (tenants, the phone_numbers index, and under each tenant its
// members, invites and WABA grants), as one value for the callers that use several concerns.
// Each part keeps one concern on the same database; the Firestore layout is the parts' together.
type Tenants struct {
	*TenantFiles
	*Memberships
	*Invites
	*TenantAuth
	*TenantAccounts
}

// NewTenants returns the tenant store. Only opts.Now is used (tenants do not expire).
func NewTenants(db *DB, opts Options) *Tenants {
	b := tenantBase{db: db, fs: db.fs, now: opts.withDefaults().Now}
	return &Tenants{
		TenantFiles: &TenantFiles{b}, Memberships: &Memberships{b}, Invites: &Invites{b},
		TenantAuth: &TenantAuth{b}, TenantAccounts: &TenantAccounts{b},
	}
}

// tenantBase is what the parts of the tenant store share: the database, its client and the
// clock, and the documents every part names.
type tenantBase struct {
	db  *DB
	fs  *firestore.Client
	now func() time.Time
}

// contacts is the contact store on the same database.
func (s tenantBase) contacts() *Contacts { return &Contacts{db: s.db, fs: s.fs, now: s.now} }

func (s tenantBase) tenantDoc(id string) *firestore.DocumentRef {
	return s.fs.Collection(TenantsCollection).Doc(id)
}

func (s tenantBase) numberDoc(id string) *firestore.DocumentRef {
	return s.fs.Collection(PhoneNumbers).Doc(id)
}

// TenantFiles keeps the tenant records: the files as applied, the phone_numbers index that
// routes each number to its tenants, and a tenant's deletion.
type TenantFiles struct{ tenantBase }

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
func (s *TenantFiles) Apply(ctx context.Context, t *tenant.Tenant, dryRun bool) (TenantApplyResult, error) {
	if t == nil || t.ID == "" {
		return TenantApplyResult{}, errors.New("apply tenant: no tenant id")
	}
	ref := s.tenantDoc(t.ID)
	res, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (TenantApplyResult, error) {
		now := s.now()
		prev, err := readTenantDoc(tx, ref)
		if err != nil {
			return TenantApplyResult{}, err
		}
		current, owned, err := s.readApplyNumbers(tx, t)
		if err != nil {
			return TenantApplyResult{}, err
		}
		res := applyResult(prev, t)
		plan, err := planNumberIndex(t, current, owned)
		if err != nil {
			return TenantApplyResult{}, err
		}
		if dryRun || (len(res.Changes) == 0 && len(plan.sets) == 0 && len(plan.deletes) == 0) {
			return res, nil
		}
		if err := writeTenantDoc(tx, ref, prev, t, res, now); err != nil {
			return TenantApplyResult{}, err
		}
		return res, s.writeNumberIndex(tx, plan, now)
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
	d, ok, err := getTx[tenantDoc](tx, ref)
	switch {
	case err != nil:
		return nil, fmt.Errorf("read tenant: %w", err)
	case !ok:
		return nil, nil
	}
	return &d, nil
}

// readApplyNumbers reads, in tx, the index documents of t's numbers (current, by number) and
// those t lists now (owned). A number t may not list (another tenant's, or shared otherwise
// than t says) refuses the apply with tenant.Problems (tenant.CheckNumbers).
func (s *TenantFiles) readApplyNumbers(tx *firestore.Transaction, t *tenant.Tenant) (map[string]numberDoc, []*firestore.DocumentSnapshot, error) {
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
	nums, err := decodeAll[numberDoc](snaps)
	if err != nil {
		return nil, nil, fmt.Errorf("decode phone number: %w", err)
	}
	uses := map[string]tenant.NumberUse{}
	current := map[string]numberDoc{}
	for i, n := range nums {
		if n != nil {
			uses[refs[i].ID] = n.use()
			current[refs[i].ID] = *n
		}
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
func (s *TenantFiles) Get(ctx context.Context, id string) (TenantRecord, error) {
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
func (s *TenantFiles) List(ctx context.Context) ([]TenantRecord, error) {
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
func (s *TenantFiles) GetByPhoneNumber(ctx context.Context, phoneNumberID string) (TenantRecord, error) {
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
