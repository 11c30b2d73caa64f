package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/assistant"
	"github.com/wapipe/wapipe/internal/assistant/assistanttest"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/turnstate"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// A member the tenant knows by business-scoped user id alone (no phone shared).
const (
	bsuidMember   = "ID.7305518822604419"
	bsuidUsername = "wayan"
)

// byUserID is m sent by the BSUID member, without a phone.
func byUserID(m whatsapp.Message) whatsapp.Message {
	m.From, m.FromUserID, m.Username, m.ContactName = "", bsuidMember, bsuidUsername, "WA Wayan"
	return m
}

func withBSUIDOwner(t *tenant.Tenant) {
	t.Members = append(t.Members, tenant.Member{UserID: bsuidMember, Role: tenant.RoleOwner, Name: "Wayan", Language: "id"})
}

// TestActionFromAPersonWithoutPhone (CONTRACT.md, Wave 4): the action body's from names a
// person by what is known of them: a BSUID and a username, and no wa_id when no phone was shared.
func TestActionFromAPersonWithoutPhone(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, withBSUIDOwner)
	in := input(tn, byUserID(buttonMsg("m-yes", "", "confirm_yes", "Ya, konfirmasi")), t0.Add(time.Minute),
		turnstate.State{Pending: pendingBooking()})
	in.ContactID = "ct_wayan"
	if !in.IsMember || in.Member.Role != tenant.RoleOwner {
		t.Fatalf("the member by BSUID is not found: %+v", in.Member)
	}
	out := run(t, assistant.New(assistanttest.NewExtractor(), assistanttest.NewGuard()), in)
	if out.Action == nil {
		t.Fatalf("outcome %+v: want the confirmed action", out)
	}
	want := assistant.ActionFrom{UserID: bsuidMember, Username: bsuidUsername, Name: "Wayan", Role: "owner"}
	if diff := cmp.Diff(want, out.Action.From); diff != "" {
		t.Errorf("from (-want, +got):\n%s", diff)
	}
	b, err := json.Marshal(out.Action.From)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); strings.Contains(got, "wa_id") || !strings.Contains(got, `"user_id":"`+bsuidMember+`"`) ||
		!strings.Contains(got, `"username":"`+bsuidUsername+`"`) {
		t.Errorf("from as JSON = %s; want user_id and username, no wa_id", got)
	}
}

// TestSenderLimitIsTheContacts: the sender limit counts per contact (Input.ContactID), whatever
// identifier its messages came by; the contact's phone is the legacy window's key, none when no
// phone was shared.
func TestSenderLimitIsTheContacts(t *testing.T) {
	t.Parallel()
	tn := newTenant(t, withBSUIDOwner, ackMode("Thanks!"), func(t *tenant.Tenant) { t.Limits.Sender = tenant.Limit{Max: 2, Per: 5 * time.Minute} })
	g := &recordingGuard{Guard: assistanttest.NewGuard()}
	e := assistant.New(assistanttest.NewExtractor(), g)
	turn := func(i int, m whatsapp.Message, contactID string) assistant.Outcome {
		in := input(tn, m, t0.Add(time.Duration(i)*time.Second), turnstate.State{})
		in.ContactID, in.ConversationID = contactID, fmt.Sprintf("conv-%d", i) // no conversation limit
		return run(t, e, in)
	}
	// One person: first by phone and BSUID, then by BSUID alone; the third message is over.
	withPhone := byUserID(textMsg("m-1", "", "halo"))
	withPhone.From = "6281200000009"
	events := []string{
		turn(1, withPhone, "ct_wayan").Event,
		turn(2, byUserID(textMsg("m-2", "", "halo")), "ct_wayan").Event,
		turn(3, byUserID(textMsg("m-3", "", "halo")), "ct_wayan").Event,
		turn(4, byUserID(textMsg("m-4", "", "halo")), "ct_other").Event,
	}
	if diff := cmp.Diff([]string{"ack", "ack", "rate_limited", "ack"}, events); diff != "" {
		t.Errorf("events (-want, +got):\n%s", diff)
	}
	want := []turnstate.SenderHit{
		{Sender: "ct_wayan", LegacySender: "6281200000009"}, {Sender: "ct_wayan"}, {Sender: "ct_wayan"}, {Sender: "ct_other"},
	}
	var got []turnstate.SenderHit
	for _, h := range g.hits {
		got = append(got, turnstate.SenderHit{Sender: h.Sender, LegacySender: h.LegacySender})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sender hits (-want, +got):\n%s", diff)
	}
}

// recordingGuard records the sender hits.
type recordingGuard struct {
	*assistanttest.Guard
	hits []turnstate.SenderHit
}

func (g *recordingGuard) HitSender(ctx context.Context, h turnstate.SenderHit) (turnstate.RateDecision, error) {
	g.hits = append(g.hits, h)
	return g.Guard.HitSender(ctx, h)
}
