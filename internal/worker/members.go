package worker

import (
	"context"

	"github.com/wapipe/wapipe/internal/members"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// tenantReply is the reply of a tenant to m without a conversation (Deps.Inbox unset):
// membership first (see members.Gate), then the TenantResponder.
func (s *Server) tenantReply(ctx context.Context, tn *tenant.Tenant, m whatsapp.Message) (responder.Reply, error) {
	if responder.Ignorable(m) {
		return responder.Reply{}, nil
	}
	// No conversation state to count in: non-members are not limited on this path.
	adm, err := members.Gate{Store: s.deps.Members}.Admit(ctx, tn, m, nil)
	if err != nil || adm.Handled {
		return adm.Reply, err
	}
	return s.deps.TenantResponder.RespondTo(ctx, responder.Turn{Tenant: tn, Member: adm.Member, Message: m})
}
