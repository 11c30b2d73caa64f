package console

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/turnstate"
)

// TestTenantPageRemovesInvitedMember: the tenant page lists the members who joined by invite,
// their numbers masked, each with a Remove button (a POST with the CSRF token and a request id,
// naming the member by a reference, not the number); the button removes the member once,
// audited; a forged POST removes nothing. Tenants, members and audit entries live in the
// Firestore emulator.
func TestTenantPageRemovesInvitedMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	tenants := store.NewTenants(db, store.Options{})
	audit := store.NewAudit(db, store.Options{})
	tn := &tenant.Tenant{ID: "clinic-01", Name: "Clinic", Language: "en", Audience: tenant.AudienceMembers,
		PhoneNumbers: []tenant.PhoneNumber{{PhoneNumberID: "1clinic", WABAID: "2"}}}
	tn.ApplyDefaults()
	if _, err := tenants.Apply(ctx, tn, false); err != nil {
		t.Fatal(err)
	}
	const joined = "6281234500042"
	contacts := store.NewContacts(db, store.Options{})
	redeem := func(id contact.Identity, name string) store.Contact {
		t.Helper()
		res, err := contacts.Resolve(ctx, tn.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := tenant.NewInviteCode()
		if err := tenants.CreateInvite(ctx, tn.ID, tenant.InviteCodeHash(code), tenant.RoleAdmin, time.Now().Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := tenants.RedeemInvite(ctx, tn.ID, tenant.InviteCodeHash(code), res.Contact, name); err != nil {
			t.Fatal(err)
		}
		return res.Contact
	}
	budi := redeem(contact.Identity{WaID: joined}, "Budi")
	// A member who redeemed a code writing by BSUID alone (a username, no phone shared).
	julian := redeem(contact.Identity{UserID: memberBSUID, Username: "julianzlc"}, "Julián")

	f := newFixture(t, false)
	f.deps.Tenants, f.deps.Members, f.deps.Audit = tenants, tenants, audit
	f.rebuild()
	code2, body := f.get(t, "/tenants/clinic-01")
	ref := regexp.MustCompile(`name="member" value="([^"]+)"`).FindStringSubmatch(body)
	if code2 != http.StatusOK || ref == nil || !strings.Contains(body, "Budi (…0042) — admin") || strings.Contains(body, joined) ||
		strings.Contains(body, memberBSUID) {
		t.Fatalf("GET = %d, want the invited members masked with a Remove form, never the number or the BSUID:\n%s", code2, body)
	}
	// The reference is logged and audited: the number's keyed ref (LOG_HASH_KEY, here the dev
	// key), never an unkeyed hash anyone could reverse by hashing guessed numbers.
	if want := logging.DevHasher().Phone(joined); ref[1] != want {
		t.Fatalf("the Remove form names the member %q, want the keyed ref %q", ref[1], want)
	}
	isMember := func(c store.Contact) bool {
		t.Helper()
		_, ok, err := tenants.RuntimeMember(ctx, tn.ID, c)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	member := func() bool { t.Helper(); return isMember(budi) }
	remove := func(form url.Values) int {
		t.Helper()
		return f.post(t, "/tenants/clinic-01/members/remove", form, f.as(t, "alice@example.com")...).Code
	}
	if code := remove(url.Values{RequestIDField: {newRequestID()}, CSRFField: {"x"}, "member": {ref[1]}}); code != http.StatusForbidden || !member() {
		t.Fatalf("POST without the CSRF token = %d (member %v), want 403 and the member kept", code, member())
	}
	req := newRequestID()
	for range 2 { // a double submit runs once
		if code := remove(url.Values{RequestIDField: {req}, "member": {ref[1]}}); code != http.StatusSeeOther {
			t.Fatalf("remove = %d, want 303 back to the page", code)
		}
	}
	if member() {
		t.Error("still a member after Remove")
	}
	e, err := audit.Get(ctx, req)
	if err != nil || e.Action != "remove_member" || e.State != store.AuditDone || e.TenantID != "clinic-01" ||
		e.Target != ref[1] || strings.Contains(e.Result+e.Target, joined) {
		t.Errorf("audit entry %+v (%v)", e, err)
	}
	_, body = f.get(t, "/tenants/clinic-01?req="+req)
	refs := regexp.MustCompile(`name="member" value="([^"]+)"`).FindAllStringSubmatch(body, -1)
	if !strings.Contains(body, "remove_member: done") || len(refs) != 1 {
		t.Fatalf("the page after removing Budi shows %d Remove forms, want Julián's:\n%s", len(refs), body)
	}
	// The member known by BSUID alone is named by the BSUID's keyed ref, and removed by it.
	if want := logging.DevHasher().User(memberBSUID); refs[0][1] != want {
		t.Errorf("the Remove form names the BSUID member %q, want the keyed ref %q", refs[0][1], want)
	}
	if code := remove(url.Values{RequestIDField: {newRequestID()}, "member": {refs[0][1]}}); code != http.StatusSeeOther || isMember(julian) {
		t.Errorf("remove the BSUID member = %d (still a member: %v)", code, isMember(julian))
	}
	// An empty ref removes nobody.
	if code := remove(url.Values{RequestIDField: {newRequestID()}, "member": {""}}); code != http.StatusSeeOther {
		t.Errorf("remove nobody = %d", code)
	}
	// Again, a new request: nobody to remove, audited as failed.
	req = newRequestID()
	if code := remove(url.Values{RequestIDField: {req}, "member": {ref[1]}}); code != http.StatusSeeOther {
		t.Errorf("remove again = %d, want 303", code)
	}
	if e, err := audit.Get(ctx, req); err != nil || e.State != store.AuditFailed {
		t.Errorf("audit entry of a second removal %+v (%v), want failed", e, err)
	}
}

// memberBSUID is a business-scoped user id of the member tests.
const memberBSUID = "CO.1047385771169864"

// TestTenantPageShowsTokens: the tenant page shows the month's LLM tokens (prompt, output)
// recorded for the tenant, read from the usage counters in the Firestore emulator.
func TestTenantPageShowsTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	guard := store.NewGuard(db, store.Options{})
	period := turnstate.Period(fixedNow)
	for i, call := range []string{"c1", "c2"} {
		if _, err := guard.ReserveCall(ctx, turnstate.CallReservation{TenantID: "acme-01", Period: period, CallID: call}); err != nil {
			t.Fatal(err)
		}
		if err := guard.RecordTokens(ctx, turnstate.TokenUse{TenantID: "acme-01", Period: period, CallID: call, Prompt: 1000 + i, Output: 50}); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, false)
	f.deps.Usage = guard
	f.rebuild()
	code, body := f.get(t, "/tenants/acme-01")
	if want := `<dd id="llm-tokens">2001 prompt, 100 output in ` + period + `</dd>`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("GET = %d, want %q in:\n%s", code, want, body)
	}
}

// TestTenantPageShowsTheMonthsMoney: the tenant page shows the month's ledger, read from the
// Firestore emulator as GET /v1/usage does: Meta's messages by category and the model's tokens
// with their exact amounts, the total to the cent, the budget and what is left, and a chart with
// a bar per day of the month, the day's figures on hover.
func TestTenantPageShowsTheMonthsMoney(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := testenv.Store(t)
	guard := store.NewGuard(db, store.Options{})
	period := turnstate.Period(fixedNow)
	day := fixedNow.UTC().Truncate(24 * time.Hour)
	for i, id := range []string{"wamid.1", "wamid.2"} {
		if _, err := guard.RecordBilled(ctx, store.BilledMessage{TenantID: "acme-01", MessageID: id, Category: "utility",
			Market: "Indonesia", Amount: 25_000_000_000, At: day.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := guard.RecordTokens(ctx, turnstate.TokenUse{TenantID: "acme-01", Period: period, CallID: "c1", Prompt: 1000, Output: 100,
		Amount: 550_000_000, At: day}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, false)
	f.deps.Usage = guard
	f.rebuild()
	code, body := f.get(t, "/tenants/acme-01")
	days := time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
	for _, want := range []string{
		`<tr><td>Meta: utility</td><td>2</td><td>0.0500</td></tr>`,
		`<td>1000 prompt (0 audio), 100 output</td><td>0.00055</td>`,
		`<td id="money-total">0.05</td>`,
		`<title>` + day.Format("2006-01-02") + `: Meta 0.0500, model 0.00055 USD</title>`,
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET = %d, want %q in the money section", code, want)
		}
	}
	if n := strings.Count(body, `<g><title>`+period); n != days {
		t.Errorf("%d days in the chart, want %d", n, days)
	}
}
