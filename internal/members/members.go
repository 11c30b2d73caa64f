package members

import (
	"context"
	"errors"
	"fmt"

	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outgoing"
	"github.com/wapipe/wapipe/internal/responder"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Store reads the members who joined by invite and redeems invites; *store.Tenants implements
// it.
type Store interface {
	RuntimeMember(ctx context.Context, id string, c store.Contact) (tenant.Member, bool, error)
	RedeemInvite(ctx context.Context, id, codeHash string, c store.Contact, name string) (tenant.Member, error)
}

// Mover redeems an invite for a contact writing on a business number: on a shared number the
// contact's choice of tenant is recorded there, where it routes (the contact stays the other
// tenants' member); tenantcache.ContactRouter implements it.
type Mover interface {
	RedeemSharedInvite(ctx context.Context, id, phoneNumberID, codeHash string, c store.Contact, name string) (tenant.Member, error)
}

// Gate decides, before the assistant, what a tenant's audience makes of a message.
type Gate struct {
	Store Store
	// Moves redeems the codes sent on a shared number; nil redeems them with Store, as on any
	// number.
	Moves Mover
}

// Admission is what membership decides about a message before the assistant sees it.
type Admission struct {
	Member   tenant.Member
	IsMember bool
	// Handled: membership answered the message (Reply, possibly none); the assistant does not
	// see it.
	Handled bool
	Reply   outgoing.Message
	// Key is the system message Reply is; Event names what happened, for the log.
	Key   i18n.Key
	Event string
}

// Admit applies the tenant's audience to m from contact c. With audience members a non-member
// gets the onboarding prompt and nothing else (a reaction or system notice, nothing at all); a
// message that is exactly an invite code redeems it (welcome, or "invalid code"), from members
// too. Before a non-member is answered (the prompt, or a code tried), and before a member's code
// is (whose welcome the assistant's rate limits never see), allow counts the message and says
// whether it may be (nil allows all): past the limit, silence and no code is tried.
func (g Gate) Admit(ctx context.Context, tn *tenant.Tenant, c store.Contact, m whatsapp.Message, allow func() bool) (Admission, error) {
	logger := logging.FromContext(ctx)
	member, isMember, err := g.Member(ctx, tn, c)
	if err != nil {
		return Admission{}, err
	}
	adm := Admission{Member: member, IsMember: isMember}
	code, isCode := "", false
	if m.Type == "text" {
		code, isCode = tenant.NormalizeInviteCode(m.Text)
	}
	switch {
	case isCode && isMember && allow != nil && !allow():
		return limited(ctx, adm, "code_limited"), nil
	case isCode && isMember:
		// A member who sends a code: most often this very code on a retry, after the attempt
		// that redeemed it failed to send the welcome. Welcome again, consume nothing. On a
		// shared number a fresh code of this tenant is still redeemed: the member may be
		// another tenant's there by an earlier code, and the code is how they pick this one.
		if g.Moves != nil && tn.SharesNumber(m.PhoneNumberID) {
			if _, err := g.redeem(ctx, tn, c, m, tenant.InviteCodeHash(code)); err != nil && !errors.Is(err, store.ErrInviteInvalid) {
				return Admission{}, fmt.Errorf("redeem invite: %w", err)
			}
		}
		adm.Handled, adm.Event = true, "invite_redeemed"
		adm.Reply, adm.Key = welcome(tn, member, m)
	case isCode && allow != nil && !allow():
		return limited(ctx, adm, "onboarding_limited"), nil
	case isCode:
		joined, err := g.redeem(ctx, tn, c, m, tenant.InviteCodeHash(code))
		if errors.Is(err, store.ErrInviteInvalid) {
			logger.InfoContext(ctx, "invite code refused: unknown, used or expired", "event", "invite_refused")
			adm.Handled, adm.Event, adm.Key = true, "invite_refused", i18n.InvalidCode
			adm.Reply = outgoing.Message{Text: i18n.Text(tn.Language, i18n.InvalidCode), Quote: true}
			return adm, nil
		}
		if err != nil {
			return Admission{}, fmt.Errorf("redeem invite: %w", err)
		}
		logger.InfoContext(ctx, "invite redeemed: a new member", "event", "invite_redeemed", "role", joined.Role)
		adm.Member, adm.IsMember, adm.Handled, adm.Event = joined, true, true, "invite_redeemed"
		adm.Reply, adm.Key = welcome(tn, joined, m)
	case !isMember && (tn.Audience == tenant.AudienceMembers || tn.SharesNumber(m.PhoneNumberID)):
		// On a shared number a stranger is routed to the number's first tenant only to be
		// told how to join one: whatever that tenant's audience, it does not serve them.
		adm.Handled, adm.Event = true, "onboarding_prompt"
		if responder.Ignorable(m) {
			return adm, nil
		}
		if allow != nil && !allow() {
			return limited(ctx, adm, "onboarding_limited"), nil
		}
		logger.InfoContext(ctx, "non-member asked for an invite code", "event", "onboarding_prompt")
		adm.Key = i18n.OnboardingPrompt
		adm.Reply = outgoing.Message{Text: i18n.Text(tn.Language, i18n.OnboardingPrompt)}
	}
	return adm, nil
}

// redeem redeems the invite codeHash for m's sender, contact c: on a shared number through
// Moves, so the sender's choice routes there.
func (g Gate) redeem(ctx context.Context, tn *tenant.Tenant, c store.Contact, m whatsapp.Message, codeHash string) (tenant.Member, error) {
	if g.Moves != nil && tn.SharesNumber(m.PhoneNumberID) {
		return g.Moves.RedeemSharedInvite(ctx, tn.ID, m.PhoneNumberID, codeHash, c, m.ContactName)
	}
	return g.Store.RedeemInvite(ctx, tn.ID, codeHash, c, m.ContactName)
}

// limited is the silence of a sender past the hour's replies to codes and prompts
// (turnstate.OnboardingMax): a non-member's (event onboarding_limited) or a member's codes
// (code_limited).
func limited(ctx context.Context, adm Admission, event string) Admission {
	logging.FromContext(ctx).InfoContext(ctx, "over the hour's replies to codes and prompts: no reply", "event", event)
	adm.Handled, adm.Event = true, event
	return adm
}

// Member looks contact c up among the tenant's file members (by any of its identifiers: a
// member listed by phone is found when they write by BSUID alone, once the phone and the BSUID
// arrived together), then the members who joined by invite.
func (g Gate) Member(ctx context.Context, tn *tenant.Tenant, c store.Contact) (tenant.Member, bool, error) {
	if m, ok := tn.MemberOf(c.Identity); ok {
		return m, true, nil
	}
	m, ok, err := g.Store.RuntimeMember(ctx, tn.ID, c)
	if err != nil {
		return tenant.Member{}, false, fmt.Errorf("look up member of tenant %s: %w", tn.ID, err)
	}
	return m, ok, nil
}

// welcome greets a new member in their language, by name when known.
func welcome(tn *tenant.Tenant, member tenant.Member, m whatsapp.Message) (outgoing.Message, i18n.Key) {
	lang := tn.EffectiveLanguage(member)
	name := member.Name
	if name == "" {
		name = m.ContactName
	}
	if name == "" {
		return outgoing.Message{Text: i18n.Text(lang, i18n.Welcome), Quote: true}, i18n.Welcome
	}
	return outgoing.Message{Text: i18n.Text(lang, i18n.WelcomeName, "name", name), Quote: true}, i18n.WelcomeName
}
