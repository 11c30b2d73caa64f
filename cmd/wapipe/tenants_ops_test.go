package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

const opsTenantFile = "id: acme-bus\nname: Acme Bus\nlanguage: id\naudience: members\nphone_numbers:\n  - {phone_number_id: \"200\", waba_id: \"300\"}\n" +
	"members:\n  - {wa_id: \"6281200000001\", role: owner, name: Pak Agus}\n"

// invited makes waID a member of tenant id by an invite, as a message with the code would.
func (e *tenantEnv) invited(t *testing.T, id, waID string) {
	t.Helper()
	code := strings.TrimSpace(mustCLI(t, e.args("invite", id)...))
	if _, err := e.tenants.RedeemInvite(context.Background(), id, tenant.InviteCodeHash(code), e.person(t, id, waID), "Budi"); err != nil {
		t.Fatalf("redeem invite: %v", err)
	}
}

// TestTenantsRemoveMember: a member who joined by invite is removed (and no longer a member);
// a member from the tenant file is refused with one line saying to edit the file; a wa_id that
// is not a member, and a tenant that does not exist, are errors that say so.
func TestTenantsRemoveMember(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", writeFile(t, opsTenantFile))...)
	const joined = "6281200000002"
	e.invited(t, "acme-bus", joined)
	if _, ok, err := e.tenants.RuntimeMember(ctx, "acme-bus", e.person(t, "acme-bus", joined)); err != nil || !ok {
		t.Fatalf("the invited contact is no member (%v)", err)
	}

	out := mustCLI(t, e.args("remove-member", "acme-bus", joined)...)
	if want := "removed Budi (…0002) (member) from acme-bus: a stranger again from the next message\n"; out != want {
		t.Errorf("remove-member printed %q, want %q", out, want)
	}
	if _, ok, err := e.tenants.RuntimeMember(ctx, "acme-bus", e.person(t, "acme-bus", joined)); err != nil || ok {
		t.Errorf("still a member after remove-member (%v)", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"file member", []string{"acme-bus", "6281200000001"}, "member from the tenant file: edit the tenant file"},
		{"removed already", []string{"acme-bus", joined}, "tenant acme-bus has no member …0002 who joined by invite"},
		{"no tenant", []string{"nobody", joined}, `no tenant "nobody"`},
	} {
		_, _, err := cli(t, e.args("remove-member", tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
	}
	rec, err := e.tenants.Get(ctx, "acme-bus")
	if err != nil || len(rec.Tenant.Members) != 1 {
		t.Errorf("the file's member after a refused removal: %+v (%v)", rec.Tenant, err)
	}
}

// TestTenantsDelete: delete asks for the id on stdin and deletes nothing on a wrong answer;
// typed right (or with --yes) it frees the tenant's numbers (another tenant can then take one),
// deletes its record and with it the ciphertexts of its token and action secret, revokes its
// API keys, deletes its members, invites and contacts (with their aliases), and leaves its
// conversations to expire.
func TestTenantsDelete(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t)
	ctx := context.Background()
	mustCLI(t, e.args("apply", "-f", writeFile(t, opsTenantFile))...)
	if _, err := e.tenants.SetAccessToken(ctx, "acme-bus", []byte("sealed-token")); err != nil {
		t.Fatal(err)
	}
	if err := e.tenants.SetActionSecret(ctx, "acme-bus", []byte("sealed-secret")); err != nil {
		t.Fatal(err)
	}
	keys := store.NewAPIKeys(store.NewDB(e.fs), store.Options{})
	if err := keys.CreateAPIKey(ctx, store.APIKeyRecord{ID: "key1", TenantID: "acme-bus", Hash: "h1", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.invited(t, "acme-bus", "6281200000002")
	invitee := e.person(t, "acme-bus", "6281200000002")
	conv := e.fs.Collection(store.Conversations).Doc(store.ConversationID(keyedid.Dev(), "acme-bus", "200", invitee.ID))
	if _, err := conv.Set(ctx, map[string]any{"tenant_id": "acme-bus", "expire_at": time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	deleteWith := func(stdin string, flags ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(withStdin(ctx, strings.NewReader(stdin)), e.args("delete", append(flags, "acme-bus")...), &out, &errb)
		return out.String(), errb.String(), err
	}
	for _, stdin := range []string{"", "acme\n", "sunrise-bus\n"} {
		if _, _, err := deleteWith(stdin); err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "not deleted") {
			t.Errorf("delete with %q on stdin: %v, want refused", stdin, err)
		}
	}
	if _, err := e.tenants.Get(ctx, "acme-bus"); err != nil {
		t.Fatalf("the tenant after refused deletes: %v", err)
	}

	out, errOut, err := deleteWith("acme-bus\n")
	if err != nil {
		t.Fatalf("delete: %v\n%s%s", err, out, errOut)
	}
	want := "deleted tenant acme-bus\nnumbers freed: 200\napi keys revoked: 1\ndocuments removed under the tenant: 4\n"
	if out != want {
		t.Errorf("delete printed %q, want %q", out, want)
	}
	if _, err := e.tenants.Get(ctx, "acme-bus"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after delete: %v, want not found (the record and its ciphertexts gone)", err)
	}
	if _, err := e.tenants.GetByPhoneNumber(ctx, "200"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("route of 200 after delete: %v, want not found", err)
	}
	if k, err := keys.GetAPIKey(ctx, "key1"); err != nil || !k.Revoked() {
		t.Errorf("api key after delete: %+v (%v), want revoked", k, err)
	}
	if _, ok, err := e.tenants.RuntimeMember(ctx, "acme-bus", invitee); err != nil || ok {
		t.Errorf("invited member after delete: %v %v, want gone", ok, err)
	}
	// The four documents: the member, the invite it used, its contact and the contact's alias.
	for _, sub := range []string{store.TenantContacts, store.ContactAliases} {
		if docs, err := e.fs.Collection(store.TenantsCollection).Doc("acme-bus").Collection(sub).Documents(ctx).GetAll(); err != nil || len(docs) != 0 {
			t.Errorf("%s after delete: %d documents (%v), want none", sub, len(docs), err)
		}
	}
	if snap, err := conv.Get(ctx); err != nil || !snap.Exists() {
		t.Errorf("conversation after delete: %v, want left to expire", err)
	}
	// The number is free: another tenant takes it.
	other := strings.ReplaceAll(opsTenantFile, "acme-bus", "other-co")
	mustCLI(t, e.args("apply", "-f", writeFile(t, other))...)
	if rec, err := e.tenants.GetByPhoneNumber(ctx, "200"); err != nil || rec.Tenant.ID != "other-co" {
		t.Errorf("route of 200 after another apply: %v (%v), want other-co", rec.Tenant, err)
	}
	if _, _, err := cli(t, e.args("delete", "--yes", "acme-bus")...); err == nil || !strings.Contains(err.Error(), `no tenant "acme-bus"`) {
		t.Errorf("delete again: %v, want no tenant", err)
	}
	if out := mustCLI(t, e.args("delete", "--yes", "other-co")...); !strings.HasPrefix(out, "deleted tenant other-co\n") {
		t.Errorf("delete --yes printed %q", out)
	}
}
