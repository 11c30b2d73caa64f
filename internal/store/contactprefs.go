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
	TenantID string `firestore:"tenant_id" json:"tenant_id"`
	// Contact is the contact's wa_id (a phone number: stored, never logged).
	Contact string `firestore:"contact" json:"contact"`
	// MarketingStopped is true after "stop", false after "resume" or "signup".
	MarketingStopped bool `firestore:"marketing_stopped" json:"marketing_stopped"`
	// MetaTime is Meta's timestamp of the preference (Unix seconds): an older event does not
	// undo a newer one.
	MetaTime  int64     `firestore:"meta_time" json:"meta_time"`
	UpdatedAt time.Time `firestore:"updated_at" json:"updated_at"`
}

// ContactPrefs keeps the contacts' preferences and the templates' categories.
type ContactPrefs struct {
	fs  *firestore.Client
	now func() time.Time
}

// NewContactPrefs returns the preference store; only opts.Now is used.
func NewContactPrefs(db *DB, opts Options) *ContactPrefs {
	return &ContactPrefs{fs: db.fs, now: opts.withDefaults().Now}
}

func (s *ContactPrefs) prefDoc(tenantID, contact string) *firestore.DocumentRef {
	return s.fs.Collection(ContactPreferences).Doc(DocID("pref\x00" + tenantID + "\x00" + contact))
}

// SetMarketing records that contact stopped (stop true) or resumed marketing messages from
// tenantID at Meta's time metaTime; an event older than the one recorded changes nothing. It
// reports whether the record changed. One transaction: one read, at most one write.
func (s *ContactPrefs) SetMarketing(ctx context.Context, tenantID, contact string, stop bool, metaTime int64) (bool, error) {
	if tenantID == "" || contact == "" {
		return false, fmt.Errorf("set marketing preference: %w", errNoContact)
	}
	ref := s.prefDoc(tenantID, contact)
	changed := false
	err := s.fs.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		changed = false
		snap, err := tx.Get(ref)
		if err != nil && status.Code(err) != codes.NotFound {
			return err
		}
		if err == nil {
			var cur ContactPreference
			if err := snap.DataTo(&cur); err != nil {
				return err
			}
			if cur.MetaTime > metaTime || (cur.MetaTime == metaTime && cur.MarketingStopped == stop) {
				return nil
			}
		}
		changed = true
		return tx.Set(ref, ContactPreference{TenantID: tenantID, Contact: contact, MarketingStopped: stop, MetaTime: metaTime, UpdatedAt: s.now()})
	}, firestore.MaxAttempts(maxTxAttempts))
	if err != nil {
		return false, fmt.Errorf("set marketing preference: %w", err)
	}
	return changed, nil
}

// Preference returns contact's preference for tenantID; the zero value (marketing allowed)
// when none was recorded. One read.
func (s *ContactPrefs) Preference(ctx context.Context, tenantID, contact string) (ContactPreference, error) {
	if tenantID == "" || contact == "" {
		return ContactPreference{}, nil
	}
	p, err := getDoc[ContactPreference](ctx, s.prefDoc(tenantID, contact), "contact preference")
	if err == nil || errors.Is(err, ErrNotFound) {
		return p, nil
	}
	return ContactPreference{}, err
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

// OptedOutOfMarketing reports whether sending template name (language) to contact must be
// refused: the contact stopped marketing messages from tenantID and wapipe knows the template
// to be MARKETING. A template wapipe has no category for is sent, and Meta decides (131050).
// One or two reads.
func (s *ContactPrefs) OptedOutOfMarketing(ctx context.Context, tenantID, contact, name, language string) (bool, error) {
	p, err := s.Preference(ctx, tenantID, contact)
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
