package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AuditCollection holds one document per operator action taken in the console (who, what, when),
// keyed by the action's request id. Audit entries do not expire.
const AuditCollection = "audit"

// Audit entry states.
const (
	AuditStarted = "started"
	AuditDone    = "done"
	AuditFailed  = "failed"
)

// ErrBadRequestID is returned for a request id that cannot be an audit document id.
var ErrBadRequestID = errors.New("bad request id")

// requestIDPattern is what a console form's request id looks like: long enough to be unguessable
// and unique, and safe as a Firestore document id.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// ValidRequestID reports whether id can be an audit entry's id.
func ValidRequestID(id string) bool { return requestIDPattern.MatchString(id) }

// AuditEntry is one operator action (audit/{ID}). It never holds message text or a secret:
// Result is a short outcome ("sent", "task wa-outbound/…"), Error a short reason.
type AuditEntry struct {
	// ID is the request id of the form that asked for the action: a double submit of one form
	// carries the same id, so it finds the entry and does not act twice.
	ID       string `firestore:"id" json:"id"`
	Operator string `firestore:"operator" json:"operator"`
	// Action is what was asked: reply, assign, close, replay, reconnect.
	Action   string `firestore:"action" json:"action"`
	TenantID string `firestore:"tenant_id,omitempty" json:"tenant_id,omitempty"`
	// Target is what the action is about: a conversation id, a dead letter id.
	Target     string    `firestore:"target" json:"target"`
	State      string    `firestore:"state" json:"state"`
	Result     string    `firestore:"result,omitempty" json:"result,omitempty"`
	Error      string    `firestore:"error,omitempty" json:"error,omitempty"`
	CreatedAt  time.Time `firestore:"created_at" json:"created_at"`
	FinishedAt time.Time `firestore:"finished_at,omitempty" json:"finished_at,omitempty"`
}

// Audit keeps the operators' actions (audit).
type Audit struct {
	fs  *firestore.Client
	now func() time.Time
}

// NewAudit returns the audit store. Only opts.Now is used (entries do not expire).
func NewAudit(db *DB, opts Options) *Audit {
	return &Audit{fs: db.fs, now: opts.withDefaults().Now}
}

func (a *Audit) doc(id string) *firestore.DocumentRef {
	return a.fs.Collection(AuditCollection).Doc(id)
}

// Begin records that e is about to run, as AuditStarted, unless an entry with e.ID exists: then
// created is false and stored is that entry, and the caller must not act again (a double
// submit). One write; one more read for a double submit.
func (a *Audit) Begin(ctx context.Context, e AuditEntry) (created bool, stored AuditEntry, err error) {
	if !ValidRequestID(e.ID) {
		return false, AuditEntry{}, ErrBadRequestID
	}
	e.State, e.CreatedAt, e.FinishedAt = AuditStarted, a.now().UTC(), time.Time{}
	_, err = a.doc(e.ID).Create(ctx, e)
	if err == nil {
		return true, e, nil
	}
	if status.Code(err) != codes.AlreadyExists {
		return false, AuditEntry{}, fmt.Errorf("create audit entry: %w", err)
	}
	stored, err = a.Get(ctx, e.ID)
	if err != nil {
		return false, AuditEntry{}, err
	}
	return false, stored, nil
}

// Finish records the outcome of the action begun under id: AuditDone with result, or
// AuditFailed with errMsg. One write.
func (a *Audit) Finish(ctx context.Context, id, state, result, errMsg string) error {
	if !ValidRequestID(id) {
		return ErrBadRequestID
	}
	_, err := a.doc(id).Update(ctx, []firestore.Update{
		{Path: "state", Value: state},
		{Path: "result", Value: result},
		{Path: "error", Value: errMsg},
		{Path: "finished_at", Value: a.now().UTC()},
	})
	if err != nil {
		return fmt.Errorf("finish audit entry: %w", err)
	}
	return nil
}

// Get reads one entry; ErrNotFound when there is none.
func (a *Audit) Get(ctx context.Context, id string) (AuditEntry, error) {
	if !ValidRequestID(id) {
		return AuditEntry{}, ErrNotFound
	}
	return getDoc[AuditEntry](ctx, a.doc(id), "audit entry")
}

// Recent returns the latest entries, newest first, at most limit of them.
func (a *Audit) Recent(ctx context.Context, limit int) ([]AuditEntry, error) {
	q := a.fs.Collection(AuditCollection).OrderBy("created_at", firestore.Desc).Limit(limit)
	return queryAll[AuditEntry](ctx, q, "audit entries")
}
