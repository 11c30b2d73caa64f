package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/tasks"
)

// tenantsOpsUsage documents the verbs of this file, in tenantsUsage.
const tenantsOpsUsage = `remove-member removes WA_ID, a member who joined the tenant by invite: from the next message
         the contact is a stranger again (with audience members, the onboarding prompt). A
         member listed in the tenant file is refused: edit the file and apply it.
delete   deletes the tenant: its numbers leave the routing index (a webhook to one is then
         unrouted), its access token and action secret are destroyed, its API keys revoked,
         its members and invites deleted; its conversations are left to expire
         (CONVERSATION_RETENTION). Asks for the id on stdin unless --yes.`

// opsFlags are the flags of the verbs of this file.
type opsFlags struct{ yes bool }

func (f *opsFlags) register(fs *flagSet) {
	fs.BoolVar(&f.yes, "yes", false, "delete: do not ask for the tenant id on stdin")
}

// checkOpsArgs checks the arguments of remove-member and delete.
func checkOpsArgs(verb string, rest []string) error {
	switch {
	case verb == "remove-member" && len(rest) != 2:
		return usageErrorf("remove-member takes a tenant id and a member's wa_id")
	case verb == "delete" && len(rest) != 1:
		return usageErrorf("delete takes one tenant id")
	}
	return nil
}

// runTenantsOps runs remove-member or delete.
func runTenantsOps(ctx context.Context, verb string, rest []string, db *store.DB, f opsFlags, stdout, stderr io.Writer) error {
	st := store.NewTenants(db, store.Options{})
	if verb == "remove-member" {
		m, err := operator.RemoveMember(ctx, st, rest[0], rest[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s (%s) from %s: a stranger again from the next message\n", tenant.MemberLabel(m), m.Role, rest[0])
		return nil
	}
	id := rest[0]
	if !f.yes {
		fmt.Fprintf(stderr, "This deletes tenant %s: its numbers, token, action secret, API keys, members and invites. Type its id to confirm: ", id)
		line, err := bufio.NewReader(io.LimitReader(stdinFrom(ctx), 256)).ReadString('\n')
		if err != nil && line == "" {
			return exitError{code: 1, msg: "not deleted: no confirmation on stdin (type the id, or pass --yes)"}
		}
		if strings.TrimSpace(line) != id {
			return exitError{code: 1, msg: fmt.Sprintf("not deleted: the id typed is not %q", id)}
		}
	}
	res, err := operator.DeleteTenant(ctx, st, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "deleted tenant %s\n", id)
	freed := strings.Join(res.Numbers, ", ")
	if freed == "" {
		freed = "none"
	}
	fmt.Fprintf(stdout, "numbers freed: %s\n", freed)
	fmt.Fprintf(stdout, "api keys revoked: %d\n", res.KeysRevoked)
	fmt.Fprintf(stdout, "documents removed under the tenant: %d\n", res.Removed)
	fmt.Fprintf(stderr, "Its conversations are left to expire. Its send queue %s is left as it is (a deleted queue's name cannot be reused for days).\n",
		tasks.TenantQueueID(id))
	return nil
}
