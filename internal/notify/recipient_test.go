package notify_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wapipe/wapipe/internal/actioncall"
	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/notify"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// Members Meta shares no phone for (shared/meta/usernames.md): listed in the tenant file by
// user_id alone, or joined by invite by BSUID alone.
const (
	fileUserID    = "ID.40981237650012"       // an admin listed by user_id only
	joinedUserID  = "ID.77120098345561"       // an admin who joined by invite, known by BSUID only
	bookerUserID  = "ID.55501234987766"       // a member listed by user_id only, who books
	parentAdminID = "ID.ENT.9000111222333444" // an admin listed by parent BSUID
)

// TestNotifyMembersKnownByBSUID: a member the tenant file lists by user_id only, or who joined by
// invite by BSUID only, is notified by "recipient" (the record has Recipient, no To, the keyed
// us_ reference and the member's conversation found by BSUID); a member who is the sender,
// matched by BSUID alone, is not notified; each record's key names the member by its BSUID.
func TestNotifyMembersKnownByBSUID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tn := tenantFile(t, "[owner, admin]", "templates:\n  notify: {name: new_request, language: en_US}\n")
	tn.Members = append(tn.Members,
		tenant.Member{UserID: fileUserID, Role: tenant.RoleAdmin, Name: "Ayu"},
		tenant.Member{UserID: parentAdminID, Role: tenant.RoleAdmin},
		tenant.Member{UserID: bookerUserID, Role: tenant.RoleAdmin, Name: "Dewi"},
	)
	w := newWorld(t, tn)
	convs := store.NewConversationStore(w.db, store.Options{})
	w.n.Conversations = convs
	// An admin who joins by invite by BSUID alone.
	code := tenant.InviteCodeHash("WP-DDDDDDDD")
	if err := w.tenants.CreateInvite(ctx, tn.ID, code, tenant.RoleAdmin, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.RedeemInvite(ctx, tn.ID, code, w.contact(t, tn.ID, contact.Identity{UserID: joinedUserID}), "Putu"); err != nil {
		t.Fatal(err)
	}
	// The file admin listed by user_id has written to the number: their conversation exists.
	ayu := w.contact(t, tn.ID, contact.Identity{UserID: fileUserID})
	ayuConv, err := convs.Locate(ctx, tn.ID, "111", ayu)
	if err != nil {
		t.Fatal(err)
	}

	// Dewi books, by BSUID alone (Meta shared no phone): she is not told of her own booking.
	a := tasks.Action{ActionID: "act-bsuid", TenantID: tn.ID, ConversationID: "c2", PhoneNumberID: "111", UserID: bookerUserID,
		MessageID: "wamid.2", CorrelationID: "corr-2"}
	req := actioncall.Request{ActionID: "act-bsuid", TenantID: tn.ID, Intent: "create_booking",
		Data: map[string]any{"client": "Pak Agus"}, From: actioncall.From{UserID: bookerUserID, Name: "Dewi", Role: "admin"}}

	got, err := w.n.Recipients(ctx, tn, []tenant.Role{tenant.RoleAdmin}, contact.Identity{UserID: bookerUserID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.WaID+m.UserID)
	}
	if diff := cmp.Diff([]string{admin, fileUserID, parentAdminID, joinedUserID, joined}, names); diff != "" {
		t.Errorf("admins to notify of the booking by BSUID (-want, +got):\n%s", diff)
	}

	for range 2 {
		if err := w.n.Notify(ctx, tn, a, req); err != nil {
			t.Fatal(err)
		}
	}
	h := logging.DevHasher()
	for _, m := range []struct {
		userID, conversation string
	}{
		{fileUserID, ayuConv},
		{parentAdminID, ""},
		{joinedUserID, ""},
	} {
		key := w.n.Key("act-bsuid", m.userID)
		rec, err := w.sends.GetSend(ctx, key)
		if err != nil {
			t.Errorf("notification to %s: %v, want one", m.userID, err)
			continue
		}
		if rec.To != "" || rec.Recipient != m.userID || rec.ToHash != h.User(m.userID) || rec.Source != store.SourceNotification ||
			rec.State != store.OutboundPending || rec.Fallback == "" {
			t.Errorf("record to %s: to %q recipient %q to_hash %q %s %s; want by recipient, keyed us_, a pending notification with its fallback",
				m.userID, rec.To, rec.Recipient, rec.ToHash, rec.Source, rec.State)
		}
		if m.conversation != "" && rec.ConversationID != m.conversation {
			t.Errorf("record to %s: conversation %q, want the member's %q (its window)", m.userID, rec.ConversationID, m.conversation)
		}
	}
	// The sender, matched by BSUID, has no notification.
	if _, err := w.sends.GetSend(ctx, w.n.Key("act-bsuid", bookerUserID)); err == nil {
		t.Error("the member who booked was notified of their own booking")
	}
	// The admin by phone and the invited admin by phone still are, by phone.
	for _, to := range []string{admin, joined} {
		rec, err := w.sends.GetSend(ctx, w.n.Key("act-bsuid", to))
		if err != nil || rec.To != to || rec.Recipient != "" {
			t.Errorf("notification to %s: %+v (%v), want one by phone", to, rec, err)
		}
	}
	// And the owner: six in all.
	if n := w.tasks.count(); n != 6 {
		t.Errorf("%d process_send tasks, want 6 (owner, two admins by phone, three by BSUID)", n)
	}
}

// TestRecipientsSenderByBSUID: the sender is left out when it is matched by its BSUID, whether
// the file lists them by user_id or they joined by invite by BSUID, and when the action names
// them by phone and BSUID together but the file by one of them.
func TestRecipientsSenderByBSUID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tn := tenantFile(t, "[admin]", "")
	tn.Members = append(tn.Members, tenant.Member{UserID: fileUserID, Role: tenant.RoleAdmin})
	w := newWorld(t, tn)
	code := tenant.InviteCodeHash("WP-EEEEEEEE")
	if err := w.tenants.CreateInvite(ctx, tn.ID, code, tenant.RoleAdmin, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.tenants.RedeemInvite(ctx, tn.ID, code, w.contact(t, tn.ID, contact.Identity{UserID: joinedUserID}), ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sender contact.Identity
		want   []string
	}{
		{"file admin by user_id", contact.Identity{UserID: fileUserID}, []string{admin, joinedUserID, joined}},
		{"file admin by phone and BSUID", contact.Identity{WaID: "6281299999999", UserID: fileUserID}, []string{admin, joinedUserID, joined}},
		{"invited admin by BSUID", contact.Identity{UserID: joinedUserID}, []string{admin, fileUserID, joined}},
		{"file admin by phone, the action by phone and BSUID", contact.Identity{WaID: admin, UserID: "ID.12312312312"}, []string{fileUserID, joinedUserID, joined}},
	} {
		got, err := w.n.Recipients(ctx, tn, []tenant.Role{tenant.RoleAdmin}, tc.sender)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, m.WaID+m.UserID)
		}
		if diff := cmp.Diff(tc.want, ids); diff != "" {
			t.Errorf("%s: recipients (-want, +got):\n%s", tc.name, diff)
		}
	}
}

// TestSenderKnownByBSUID: a notification names a sender Meta shares no phone for by their
// quoted name beside their role and their username, else by their username, else by a masked
// reference: never their whole BSUID.
func TestSenderKnownByBSUID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from actioncall.From
		want string
	}{
		{"profile name", actioncall.From{UserID: bookerUserID, Username: "dewi_s", Name: "Dewi", Role: "admin"}, `"Dewi" (admin, @dewi_s)`},
		{"username", actioncall.From{UserID: bookerUserID, Username: "dewi_s", Role: "admin"}, "@dewi_s (admin)"},
		{"username with its @, not a member", actioncall.From{UserID: bookerUserID, Username: "@dewi_s"}, "@dewi_s (not a member)"},
	} {
		if got := notify.Sender(tc.from, "en"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := notify.Sender(actioncall.From{UserID: bookerUserID}, "en"); got == "" || strings.Contains(got, bookerUserID) || strings.Contains(got, bookerUserID[3:]) {
		t.Errorf("BSUID alone: %q, want a masked reference, not the id", got)
	}
}
