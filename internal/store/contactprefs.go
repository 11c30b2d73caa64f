package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Collections of what Meta's other events record. They do not expire: a contact's choice and a
// template's category stay true until Meta says otherwise.
const (
	// ContactPreferences holds one document per (tenant, contact): the contact's marketing
	// preference (field user_preferences).
	ContactPreferences = "contact_preferences"
	// TemplatesCollection holds one document per (tenant, template name, language): what the
	// template webhooks said of it (status, category, quality).
	TemplatesCollection = "templates"
)

// ContactPreference is a contact's marketing preference for a tenant.
type ContactPreference struct {
	TenantID  string `firestore:"tenant_id" json:"tenant_id"`
	ContactID string `firestore:"contact_id,omitempty" json:"contact_id,omitempty"`
	// Contact is the contact's phone as of the preference, for documents from before contacts
	// (personal data: stored, never logged).
	Contact string `firestore:"contact,omitempty" json:"-"`
	// MarketingStopped is true after "stop", false after "resume" or "signup".
	MarketingStopped bool `firestore:"marketing_stopped" json:"marketing_stopped"`
	// MetaTime is Meta's timestamp of the preference (Unix seconds): an older event does not
	// undo a newer one.
	MetaTime  int64     `firestore:"meta_time" json:"meta_time"`
	UpdatedAt time.Time `firestore:"updated_at" json:"updated_at"`
}

// ContactPrefs keeps the contacts' preferences and the templates' categories.
type ContactPrefs struct {
	db  *DB
	fs  *firestore.Client
	now func() time.Time
}

// NewContactPrefs returns the preference store; only opts.Now is used.
func NewContactPrefs(db *DB, opts Options) *ContactPrefs {
	return &ContactPrefs{db: db, fs: db.fs, now: opts.withDefaults().Now}
}

// prefDoc is contact c's preference document for tenantID, keyed (keyedid).
func (s *ContactPrefs) prefDoc(tenantID string, c Contact) *firestore.DocumentRef {
	return s.fs.Collection(ContactPreferences).Doc(s.db.keyer.ID("preference", tenantID, c.ID))
}

// prefRefs are the documents that may hold c's preference: its own, then, until the migration
// has run, the one named after its phone before contacts.
func (s *ContactPrefs) prefRefs(ctx context.Context, tenantID string, c Contact) []*firestore.DocumentRef {
	refs := []*firestore.DocumentRef{s.prefDoc(tenantID, c)}
	if c.WaID != "" && s.db.legacyReads(ctx) {
		refs = append(refs, s.fs.Collection(ContactPreferences).Doc(legacyPreferenceID(tenantID, c.WaID)))
	}
	return refs
}

// SetMarketing records that contact c stopped (stop true) or resumed marketing messages from
// tenantID at Meta's time metaTime; an event older than the one recorded changes nothing. It
// reports whether the record changed. One transaction: one read, at most one write.
func (s *ContactPrefs) SetMarketing(ctx context.Context, tenantID string, c Contact, stop bool, metaTime int64) (bool, error) {
	if tenantID == "" || c.ID == "" {
		return false, fmt.Errorf("set marketing preference: %w", errNoContact)
	}
	refs := s.prefRefs(ctx, tenantID, c)
	changed, err := runTx(ctx, s.fs, nil, func(ctx context.Context, tx *firestore.Transaction) (bool, error) {
		snaps, err := tx.GetAll(refs)
		if err != nil {
			return false, err
		}
		cur, ok, err := firstExisting[ContactPreference](snaps)
		if err != nil {
			return false, err
		}
		if ok && (cur.MetaTime > metaTime || (cur.MetaTime == metaTime && cur.MarketingStopped == stop)) {
			return false, nil
		}
		return true, tx.Set(refs[0], ContactPreference{TenantID: tenantID, ContactID: c.ID, MarketingStopped: stop,
			MetaTime: metaTime, UpdatedAt: s.now()})
	})
	if err != nil {
		return false, fmt.Errorf("set marketing preference: %w", err)
	}
	return changed, nil
}

// Preference returns contact c's preference for tenantID; the zero value (marketing allowed)
// when none was recorded. One read.
func (s *ContactPrefs) Preference(ctx context.Context, tenantID string, c Contact) (ContactPreference, error) {
	if tenantID == "" || c.ID == "" {
		return ContactPreference{}, nil
	}
	snaps, err := s.fs.GetAll(ctx, s.prefRefs(ctx, tenantID, c))
	if err != nil {
		return ContactPreference{}, fmt.Errorf("read contact preference: %w", err)
	}
	p, _, err := firstExisting[ContactPreference](snaps)
	if err != nil {
		return ContactPreference{}, fmt.Errorf("decode contact preference: %w", err)
	}
	return p, nil
}

// move copies from's preference for tenantID to into, unless into has its own.
func (s *ContactPrefs) move(ctx context.Context, tenantID string, from, into Contact) error {
	p, err := s.Preference(ctx, tenantID, from)
	if err != nil || p.UpdatedAt.IsZero() {
		return err
	}
	p.ContactID, p.Contact = into.ID, ""
	_, err = s.prefDoc(tenantID, into).Create(ctx, p)
	if status.Code(err) == codes.AlreadyExists {
		return nil
	}
	return err
}

// Template is what the template webhooks said of one of a tenant's templates.
type Template struct {
	TenantID string `firestore:"tenant_id" json:"tenant_id"`
	Name     string `firestore:"name" json:"name"`
	Language string `firestore:"language" json:"language"`
	// Status is APPROVED, REJECTED, PAUSED, DISABLED, PENDING... as Meta sent it.
	Status string `firestore:"status,omitempty" json:"status,omitempty"`
	// Category is MARKETING, UTILITY or AUTHENTICATION.
	Category  string    `firestore:"category,omitempty" json:"category,omitempty"`
	Quality   string    `firestore:"quality,omitempty" json:"quality,omitempty"`
	UpdatedAt time.Time `firestore:"updated_at" json:"updated_at"`
	// The fields a listing or a creation adds (templates.go): Meta's template id and account,
	// the components as Meta's JSON, and when and from where the status came: a status webhook
	// (StatusWebhook) wins over a listing older than it.
	ID           string    `firestore:"template_id,omitempty" json:"id,omitempty"`
	WABAID       string    `firestore:"waba_id,omitempty" json:"waba_id,omitempty"`
	Components   string    `firestore:"components,omitempty" json:"components,omitempty"`
	StatusAt     time.Time `firestore:"status_at,omitempty" json:"status_at,omitempty"`
	StatusSource string    `firestore:"status_source,omitempty" json:"status_source,omitempty"`
	// CreatedBy is the tenant that created the template through wapipe (POST /v1/templates);
	// empty for one created elsewhere. On an account shared by several tenants only its creator
	// may delete it.
	CreatedBy string `firestore:"created_by,omitempty" json:"created_by,omitempty"`
}

// CategoryMarketing is the category of a marketing template.
const CategoryMarketing = "MARKETING"

func (s *ContactPrefs) templateDoc(tenantID, name, language string) *firestore.DocumentRef {
	return templateRef(s.fs, tenantID, name, language)
}

// RecordTemplate merges what a template webhook said (the non-empty fields of t) into the
// tenant's template. One write.
func (s *ContactPrefs) RecordTemplate(ctx context.Context, t Template) error {
	if t.TenantID == "" || t.Name == "" {
		return fmt.Errorf("record template: no tenant or name")
	}
	now := s.now()
	doc := map[string]any{"tenant_id": t.TenantID, "name": t.Name, "language": t.Language, "updated_at": now}
	for path, v := range map[string]string{"status": t.Status, "category": strings.ToUpper(t.Category), "quality": t.Quality} {
		if v != "" {
			doc[path] = v
		}
	}
	if t.Status != "" {
		// Stamped, so that a listing older than this status does not undo it (templates.go).
		doc["status_at"], doc["status_source"] = now, StatusWebhook
	}
	// A merge, so that a category update keeps the status a status update recorded.
	if _, err := s.templateDoc(t.TenantID, t.Name, t.Language).Set(ctx, doc, firestore.MergeAll); err != nil {
		return fmt.Errorf("record template: %w", err)
	}
	return nil
}

// OptedOutOfMarketing reports whether sending template name (language) to contact c must be
// refused: the contact stopped marketing messages from tenantID and wapipe knows the template
// to be MARKETING. A template wapipe has no category for is sent, and Meta decides (131050).
// One or two reads.
func (s *ContactPrefs) OptedOutOfMarketing(ctx context.Context, tenantID string, c Contact, name, language string) (bool, error) {
	p, err := s.Preference(ctx, tenantID, c)
	if err != nil || !p.MarketingStopped {
		return false, err
	}
	t, err := getDoc[Template](ctx, s.templateDoc(tenantID, name, language), "template")
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return t.Category == CategoryMarketing, nil
}
