package tenants

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/console/page"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// MemberAdmin lists and removes the members who joined a tenant by invite; *store.Tenants
// implements it.
type MemberAdmin interface {
	operator.MemberRemover
	RuntimeMembers(ctx context.Context, id string) ([]store.RuntimeMemberRecord, error)
}

// invitedView is a member who joined by invite, as the tenant page shows them: the number
// masked, and Ref naming them in the Remove form without the number.
type invitedView struct {
	Ref, Label string
	Role       tenant.Role
	JoinedAt   time.Time
}

// memberRef names member r in the Remove form: the page and the request carry no phone number
// and no BSUID. It is the identifier's keyed ref (ph_… of the phone, else us_… of the BSUID, as
// in every log line; `wapipe hash-phone` finds a ph_), or the contact's id (ct_…, random) for a
// member known by neither; never an unkeyed hash, which anyone could reverse by hashing guessed
// numbers: the ref is logged and kept in the audit entry.
func (s *Server) memberRef(r store.RuntimeMemberRecord) string {
	switch {
	case r.Member.WaID != "":
		return s.deps.Hasher.Phone(r.Member.WaID)
	case r.Member.UserID != "":
		return s.deps.Hasher.User(r.Member.UserID)
	}
	return r.ContactID
}

// memberWho is what operator.RemoveMember is given for member r: its phone, else its BSUID,
// else its contact id.
func memberWho(r store.RuntimeMemberRecord) string {
	switch {
	case r.Member.WaID != "":
		return r.Member.WaID
	case r.Member.UserID != "":
		return r.Member.UserID
	}
	return r.ContactID
}

// invitedMembers lists the tenant's members who joined by invite, or says why not.
func (s *Server) invitedMembers(ctx context.Context, id string) ([]invitedView, string) {
	if s.deps.Members == nil {
		return nil, "not available"
	}
	recs, err := s.deps.Members.RuntimeMembers(ctx, id)
	if err != nil {
		page.Logger(ctx).Warn("read the members who joined by invite", "event", "console_members_failed", "tenant_id", id, "error", err)
		return nil, "unavailable"
	}
	out := make([]invitedView, 0, len(recs))
	for _, r := range recs {
		out = append(out, invitedView{Ref: s.memberRef(r), Label: tenant.MemberLabel(r.Member), Role: r.Member.Role, JoinedAt: r.JoinedAt})
	}
	return out, ""
}

// errNoSuchMember refuses a Remove whose member is not (or no longer) among those who joined by
// invite.
var errNoSuchMember = errors.New("no such member who joined by invite (removed already?)")

// handleRemoveMember removes a member who joined the tenant by invite (POST, CSRF-protected and
// audited once per request id, like the console's other actions), as `wapipe tenants
// remove-member` does: from their next message they are a stranger again.
func (s *Server) handleRemoveMember() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, err := s.deps.Tenants.Get(r.Context(), chi.URLParam(r, "tenant"))
		if err != nil {
			s.kit.Fail(w, r, "Read the tenant", err)
			return
		}
		id, ref := rec.Tenant.ID, r.PostForm.Get("member")
		s.kit.Perform(w, r, page.Action{Name: "remove_member", TenantID: id, Target: ref, Back: "/tenants/" + id,
			Run: func(ctx context.Context) (string, error) {
				if s.deps.Members == nil {
					return "", page.ErrNotAvailable
				}
				recs, err := s.deps.Members.RuntimeMembers(ctx, id)
				if err != nil {
					return "", err
				}
				for _, m := range recs {
					if ref != "" && s.memberRef(m) == ref {
						removed, err := operator.RemoveMember(ctx, s.deps.Members, id, memberWho(m))
						if err != nil {
							return "", err
						}
						return tenant.MemberLabel(removed) + " removed", nil
					}
				}
				return "", errNoSuchMember
			}})
	})
}
