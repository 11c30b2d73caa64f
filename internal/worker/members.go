package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// tenantReply is the reply of a tenant to m without a conversation (Deps.Inbox unset):
// membership first (see admit), then the TenantResponder.
func (s *Server) tenantReply(ctx context.Context, tn *tenant.Tenant, m whatsapp.Message) (responder.Reply, error) {
	if responder.Ignorable(m) {
		return responder.Reply{}, nil
	}
	// No conversation state to count in: non-members are not limited on this path.
	adm, err := s.admit(ctx, tn, m, nil)
	if err != nil || adm.handled {
		return adm.reply, err
	}
	return s.deps.TenantResponder.RespondTo(ctx, responder.Turn{Tenant: tn, Member: adm.member, Message: m})
}

// admission is what membership decides about a message before the assistant sees it.
type admission struct {
	member   tenant.Member
	isMember bool
	// handled: membership answered the message (reply, possibly none); the assistant does not
	// see it.
	handled bool
	reply   responder.Reply
	// key is the system message reply is; event names what happened, for the log.
	key   i18n.Key
	event string
}

// admit applies the tenant's audience to m. With audience members a non-member gets the
// onboarding prompt and nothing else (a reaction or system notice, nothing at all); a message
// that is exactly an invite code redeems it (welcome, or "invalid code"), from members too.
// Before a non-member is answered (the prompt, or a code tried) allow counts the message and
// says whether it may be (nil allows all): past the limit, silence and no code is tried.
func (s *Server) admit(ctx context.Context, tn *tenant.Tenant, m whatsapp.Message, allow func() bool) (admission, error) {
	logger := logging.FromContext(ctx)
	member, isMember, err := s.member(ctx, tn, m.From)
	if err != nil {
		return admission{}, err
	}
	adm := admission{member: member, isMember: isMember}
	code, isCode := "", false
	if m.Type == "text" {
		code, isCode = tenant.NormalizeInviteCode(m.Text)
	}
	switch {
	case isCode && isMember:
		// A member who sends a code: most often this very code on a retry, after the attempt
		// that redeemed it failed to send the welcome. Welcome again, consume nothing.
		adm.handled, adm.event = true, "invite_redeemed"
		adm.reply, adm.key = welcome(tn, member, m)
	case isCode && allow != nil && !allow():
		return limitedNonMember(ctx, adm), nil
	case isCode:
		joined, err := s.deps.Members.RedeemInvite(ctx, tn.ID, tenant.InviteCodeHash(code), m.From, m.ContactName)
		if errors.Is(err, store.ErrInviteInvalid) {
			logger.InfoContext(ctx, "invite code refused: unknown, used or expired", "event", "invite_refused")
			adm.handled, adm.event, adm.key = true, "invite_refused", i18n.InvalidCode
			adm.reply = responder.Reply{Text: i18n.Text(tn.Language, i18n.InvalidCode), Quote: true}
			return adm, nil
		}
		if err != nil {
			return admission{}, fmt.Errorf("redeem invite: %w", err)
		}
		logger.InfoContext(ctx, "invite redeemed: a new member", "event", "invite_redeemed", "role", joined.Role)
		adm.member, adm.isMember, adm.handled, adm.event = joined, true, true, "invite_redeemed"
		adm.reply, adm.key = welcome(tn, joined, m)
	case !isMember && tn.Audience == tenant.AudienceMembers:
		adm.handled, adm.event = true, "onboarding_prompt"
		if responder.Ignorable(m) {
			return adm, nil
		}
		if allow != nil && !allow() {
			return limitedNonMember(ctx, adm), nil
		}
		logger.InfoContext(ctx, "non-member asked for an invite code", "event", "onboarding_prompt")
		adm.key = i18n.OnboardingPrompt
		adm.reply = responder.Reply{Text: i18n.Text(tn.Language, i18n.OnboardingPrompt)}
	}
	return adm, nil
}

// limitedNonMember is the silence of a non-member past its replies of the hour.
func limitedNonMember(ctx context.Context, adm admission) admission {
	logging.FromContext(ctx).InfoContext(ctx, "non-member over its replies of the hour: no reply", "event", "onboarding_limited")
	adm.handled, adm.event = true, "onboarding_limited"
	return adm
}

// member looks waID up among the tenant's file members, then the members who joined by invite.
func (s *Server) member(ctx context.Context, tn *tenant.Tenant, waID string) (tenant.Member, bool, error) {
	if m, ok := tn.Member(waID); ok {
		return m, true, nil
	}
	m, ok, err := s.deps.Members.RuntimeMember(ctx, tn.ID, waID)
	if err != nil {
		return tenant.Member{}, false, fmt.Errorf("look up member of tenant %s: %w", tn.ID, err)
	}
	return m, ok, nil
}

// welcome greets a new member in their language, by name when known.
func welcome(tn *tenant.Tenant, member tenant.Member, m whatsapp.Message) (responder.Reply, i18n.Key) {
	lang := tn.EffectiveLanguage(member)
	name := member.Name
	if name == "" {
		name = m.ContactName
	}
	if name == "" {
		return responder.Reply{Text: i18n.Text(lang, i18n.Welcome), Quote: true}, i18n.Welcome
	}
	return responder.Reply{Text: i18n.Text(lang, i18n.WelcomeName, "name", name), Quote: true}, i18n.WelcomeName
}
