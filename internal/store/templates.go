package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Where a template's status came from (Template.StatusSource).
const (
	// StatusWebhook: a message_template_status_update webhook (RecordTemplate).
	StatusWebhook = "webhook"
	// StatusGraph: a listing or a creation (RecordListing, RecordCreated).
	StatusGraph = "graph"
)

// The statuses of a template wapipe refuses to send (the api's 422 template_not_approved):
// Meta would refuse them too.
var notApprovedStatuses = []string{"PENDING", "REJECTED", "PAUSED", "DISABLED"}

// NotApproved reports whether status is one a template cannot be sent in.
func NotApproved(status string) bool { return slices.Contains(notApprovedStatuses, status) }

// templateChunk bounds the templates one transaction writes, well under Firestore's limits.
const templateChunk = 200

// Templates keeps what wapipe knows of the tenants' message templates (collection templates):
// the listings and creations the worker made with Graph, and the template webhooks
// (ContactPrefs.RecordTemplate), one document per (tenant, name, language).
type Templates struct {
	fs  *firestore.Client
	now func() time.Time
	// tenants reads the creators' files (ForeignNames).
	tenants *Tenants
}

// NewTemplates returns the template store; only opts.Now is used.
func NewTemplates(db *DB, opts Options) *Templates {
	return &Templates{fs: db.fs, now: opts.withDefaults().Now, tenants: NewTenants(db, opts)}
}

func templateRef(fs *firestore.Client, tenantID, name, language string) *firestore.DocumentRef {
	return fs.Collection(TemplatesCollection).Doc(DocID("template\x00" + tenantID + "\x00" + name + "\x00" + language))
}

// Get returns tenantID's template name in language, or ErrNotFound. One read.
func (s *Templates) Get(ctx context.Context, tenantID, name, language string) (Template, error) {
	return getDoc[Template](ctx, templateRef(s.fs, tenantID, name, language), "template")
}

// List returns tenantID's templates by name, then language. One query.
func (s *Templates) List(ctx context.Context, tenantID string) ([]Template, error) {
	snaps, err := s.fs.Collection(TemplatesCollection).Where("tenant_id", "==", tenantID).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out := make([]Template, 0, len(snaps))
	for _, sn := range snaps {
		var t Template
		if err := sn.DataTo(&t); err != nil {
			return nil, fmt.Errorf("decode template: %w", err)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Template) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Language, b.Language))
	})
	return out, nil
}

// RecordListing records a complete listing of tenantID's templates that began at `at` (before
// the first Graph call) and returns the templates as recorded, in listed's order. A status a
// webhook recorded after `at` is newer than the listing and stays, with its category; every
// other field is the listing's. A recorded template the listing lacks was deleted at Meta and
// is removed, unless its status is newer than the listing (a template created meanwhile).
func (s *Templates) RecordListing(ctx context.Context, tenantID string, at time.Time, listed []Template) ([]Template, error) {
	if tenantID == "" {
		return nil, errors.New("record template listing: no tenant")
	}
	out := make([]Template, 0, len(listed))
	seen := map[string]bool{}
	for chunk := range slices.Chunk(listed, templateChunk) {
		got, err := s.recordChunk(ctx, tenantID, at, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	for _, t := range listed {
		seen[templateRef(s.fs, tenantID, t.Name, t.Language).ID] = true
	}
	return out, s.dropUnlisted(ctx, tenantID, at, seen)
}

// recordChunk records some of a listing in one transaction.
func (s *Templates) recordChunk(ctx context.Context, tenantID string, at time.Time, chunk []Template) ([]Template, error) {
	refs := make([]*firestore.DocumentRef, len(chunk))
	for i, t := range chunk {
		refs[i] = templateRef(s.fs, tenantID, t.Name, t.Language)
	}
	out, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) ([]Template, error) {
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return nil, err
		}
		recorded, err := decodeAll[Template](snaps)
		if err != nil {
			return nil, err
		}
		out := make([]Template, len(chunk))
		for i, t := range chunk {
			var cur Template
			if recorded[i] != nil {
				cur = *recorded[i]
			}
			out[i] = mergeListed(tenantID, at, cur, t, s.now())
			if err := tx.Set(refs[i], out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}, firestore.MaxAttempts(maxTxAttempts))
	if err != nil {
		return nil, fmt.Errorf("record template listing: %w", err)
	}
	return out, nil
}

// mergeListed is what a listing made at `at` leaves of the recorded cur: listed's fields, but
// the status (and category) of a webhook newer than the listing.
func mergeListed(tenantID string, at time.Time, cur, listed Template, now time.Time) Template {
	t := listed
	t.TenantID, t.UpdatedAt = tenantID, now
	t.Quality = cmp.Or(listed.Quality, cur.Quality)
	t.CreatedBy = cmp.Or(listed.CreatedBy, cur.CreatedBy)
	if cur.StatusSource == StatusWebhook && cur.StatusAt.After(at) {
		t.Status, t.StatusAt, t.StatusSource = cur.Status, cur.StatusAt, cur.StatusSource
		t.Category = cmp.Or(cur.Category, listed.Category)
		return t
	}
	t.StatusAt, t.StatusSource = at, StatusGraph
	return t
}

// dropUnlisted removes tenantID's recorded templates a listing made at `at` did not have,
// unless their status is newer than the listing.
func (s *Templates) dropUnlisted(ctx context.Context, tenantID string, at time.Time, seen map[string]bool) error {
	snaps, err := s.fs.Collection(TemplatesCollection).Where("tenant_id", "==", tenantID).Documents(ctx).GetAll()
	if err != nil {
		return fmt.Errorf("list recorded templates: %w", err)
	}
	var stale []*firestore.DocumentRef
	for _, sn := range snaps {
		if !seen[sn.Ref.ID] {
			stale = append(stale, sn.Ref)
		}
	}
	for chunk := range slices.Chunk(stale, templateChunk) {
		err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			snaps, err := tx.GetAll(chunk)
			if err != nil {
				return err
			}
			for _, sn := range snaps {
				var cur Template
				if !sn.Exists() || sn.DataTo(&cur) != nil || cur.StatusAt.After(at) {
					continue
				}
				if err := tx.Delete(sn.Ref); err != nil {
					return err
				}
			}
			return nil
		}, firestore.MaxAttempts(maxTxAttempts))
		if err != nil {
			return fmt.Errorf("remove deleted templates: %w", err)
		}
	}
	return nil
}

// RecordCreated records a template Meta accepted at `at` (before the call), unless a webhook
// already said more of it. One transaction.
func (s *Templates) RecordCreated(ctx context.Context, t Template, at time.Time) (Template, error) {
	got, err := s.recordChunk(ctx, t.TenantID, at, []Template{t})
	if err != nil {
		return Template{}, err
	}
	return got[0], nil
}

// CreatedIn returns the templates named name that tenantID created through wapipe in the
// account wabaID, each language its own (Meta's id in ID). One query.
func (s *Templates) CreatedIn(ctx context.Context, tenantID, wabaID, name string) ([]Template, error) {
	all, err := s.inAccount(ctx, wabaID, name)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(t Template) bool { return t.creator() != tenantID }), nil
}

// ForeignNames returns, by name, the templates of the account wabaID that a tenant other than
// tenantID created there through wapipe and does not let its co-tenants use (its
// templates.common), with their creator: on an account several businesses share, tenantID
// neither lists nor sends them. A template made outside wapipe (WhatsApp Manager) has no creator
// and is nobody's to withhold. One query, and one read per creator.
func (s *Templates) ForeignNames(ctx context.Context, tenantID, wabaID string) (map[string]string, error) {
	all, err := s.inAccount(ctx, wabaID, "")
	if err != nil {
		return nil, err
	}
	return s.withheld(ctx, tenantID, all)
}

// ForeignOwner is ForeignNames for the one template name: its creator when it withholds it from
// tenantID, else "". One query, and at most one read.
func (s *Templates) ForeignOwner(ctx context.Context, tenantID, wabaID, name string) (string, error) {
	all, err := s.inAccount(ctx, wabaID, name)
	if err != nil {
		return "", err
	}
	foreign, err := s.withheld(ctx, tenantID, all)
	return foreign[name], err
}

// withheld is, by name, those of ts that a tenant other than tenantID created and does not list
// in its templates.common, with their creator.
func (s *Templates) withheld(ctx context.Context, tenantID string, ts []Template) (map[string]string, error) {
	common := map[string][]string{}
	out := map[string]string{}
	for _, t := range ts {
		c := t.creator()
		if c == "" || c == tenantID {
			continue
		}
		shared, ok := common[c]
		if !ok {
			rec, err := s.tenants.Get(ctx, c)
			switch {
			case errors.Is(err, ErrNotFound):
				// Its creator is gone: the template stays withheld, as its own was.
			case err != nil:
				return nil, err
			default:
				shared = rec.Tenant.Templates.Common
			}
			common[c] = shared
		}
		if !slices.Contains(shared, t.Name) {
			out[t.Name] = c
		}
	}
	return out, nil
}

// CountCreatedIn counts the templates (each name in each language) tenantID created through
// wapipe in the account wabaID. One query.
func (s *Templates) CountCreatedIn(ctx context.Context, tenantID, wabaID string) (int, error) {
	n, err := count(ctx, s.fs.Collection(TemplatesCollection).Where("tenant_id", "==", tenantID).
		Where("waba_id", "==", wabaID).Where("created_by", "==", tenantID))
	if err != nil {
		return 0, fmt.Errorf("count the templates created in account %s: %w", wabaID, err)
	}
	return int(n), nil
}

// NameTakenBy returns the tenant other than tenantID that created a template named name in the
// account wabaID through wapipe, "" when none did. One query.
func (s *Templates) NameTakenBy(ctx context.Context, tenantID, wabaID, name string) (string, error) {
	all, err := s.inAccount(ctx, wabaID, name)
	if err != nil {
		return "", err
	}
	for _, t := range all {
		if c := t.creator(); c != "" && c != tenantID {
			return c, nil
		}
	}
	return "", nil
}

// inAccount returns every tenant's records of the templates in the account wabaID: all of them,
// or those named name when it is not "".
func (s *Templates) inAccount(ctx context.Context, wabaID, name string) ([]Template, error) {
	q := s.fs.Collection(TemplatesCollection).Where("waba_id", "==", wabaID)
	if name != "" {
		q = q.Where("name", "==", name)
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list the templates of account %s: %w", wabaID, err)
	}
	ts, err := decodeAll[Template](snaps)
	if err != nil {
		return nil, fmt.Errorf("decode the templates of account %s: %w", wabaID, err)
	}
	out := make([]Template, 0, len(ts))
	for _, t := range ts {
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

// creator is the tenant that created t through wapipe, as that tenant's own record of it says:
// "" for a template made elsewhere, and for another tenant's record of a listing.
func (t Template) creator() string {
	if t.CreatedBy != "" && t.CreatedBy == t.TenantID {
		return t.CreatedBy
	}
	return ""
}

// DeleteOne removes tenantID's template name in language. One write.
func (s *Templates) DeleteOne(ctx context.Context, tenantID, name, language string) error {
	if _, err := templateRef(s.fs, tenantID, name, language).Delete(ctx); err != nil && status.Code(err) != codes.NotFound {
		return fmt.Errorf("delete template %s (%s): %w", name, language, err)
	}
	return nil
}

// Delete removes tenantID's template name in every language. One query and a write per
// language.
func (s *Templates) Delete(ctx context.Context, tenantID, name string) error {
	snaps, err := s.fs.Collection(TemplatesCollection).Where("tenant_id", "==", tenantID).Where("name", "==", name).Documents(ctx).GetAll()
	if err != nil {
		return fmt.Errorf("find template %s: %w", name, err)
	}
	for _, sn := range snaps {
		if _, err := sn.Ref.Delete(ctx); err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("delete template %s: %w", name, err)
		}
	}
	return nil
}
