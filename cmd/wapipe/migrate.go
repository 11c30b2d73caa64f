package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/wapipe/wapipe/internal/store"
)

const migrateUsage = `Usage: wapipe migrate [--dry-run] [--rekey] [flags]

Carries the documents about people over to the ids contacts give them. Before contacts, wapipe
named a person's conversation, sender window, quota share and marketing preference after a plain
hash of their phone number, and their membership by invite and shared-number choice after the
number itself; now every such id derives from the person's contact (ct_…), keyed with
LOG_HASH_KEY. Until this has run, the services read the old ids when they find nothing under the
new ones, so nothing is lost meanwhile; once it has completed (nothing left, no conversation busy),
a marker stops those reads. Run it after every service runs the new code, with the deployment's
LOG_HASH_KEY (required unless Firestore is the emulator, where the dev default serves).

It is idempotent and resumable: a run that stops, or leaves a conversation a turn was holding
("busy"), is run again and does what is left. --dry-run counts what would move and writes
nothing.

--rekey, after LOG_HASH_KEY was rotated: with the new key in LOG_HASH_KEY and the old one in
LOG_HASH_KEY_PREVIOUS (set on every service too, so they read both meanwhile), moves what was
named under the old key (contact aliases, conversations, windows, shares, preferences,
shared-number choices) to ids under the new one. Then remove LOG_HASH_KEY_PREVIOUS.`

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", migrateUsage)
	var (
		c             connFlags
		dryRun, rekey bool
	)
	c.registerFirestore(fs)
	fs.BoolVar(&dryRun, "dry-run", false, "count what would move; write nothing")
	fs.BoolVar(&rekey, "rekey", false, "also move what was named under LOG_HASH_KEY_PREVIOUS to ids under LOG_HASH_KEY")
	if _, err := fs.parse(args, stdout); err != nil {
		return err
	}
	if err := c.resolve(); err != nil {
		return err
	}
	if rekey && c.conn.Keyer.Previous() == nil {
		return usageErrorf("--rekey needs the key before the rotation in LOG_HASH_KEY_PREVIOUS (and the new one in LOG_HASH_KEY)")
	}
	db, err := c.store(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if os.Getenv("LOG_HASH_KEY") == "" {
		fmt.Fprintln(stderr, "wapipe: LOG_HASH_KEY is not set: naming with the dev default key (right for the local stack only)")
	}
	rep, err := store.NewMigrator(db, store.Options{}).Run(ctx, store.MigrateOptions{DryRun: dryRun, Rekey: rekey,
		Progress: func(step string, n int) { fmt.Fprintf(stderr, "%s: %d\n", step, n) }})
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, migrationSummary(rep))
	return nil
}

// migrationSummary is what a run did, one line a step, then the verdict.
func migrationSummary(rep store.MigrationReport) string {
	var b strings.Builder
	verb := "moved"
	if rep.DryRun {
		verb = "would move"
	}
	steps := make([]string, 0, len(rep.Moved))
	for s := range rep.Moved {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	for _, s := range steps {
		fmt.Fprintf(&b, "%s %d %s\n", verb, rep.Moved[s], s)
	}
	made := "contacts made"
	if rep.DryRun {
		made = "contacts to make"
	}
	fmt.Fprintf(&b, "%s: %d\n", made, rep.Contacts)
	switch {
	case rep.DryRun:
		b.WriteString("dry run: nothing written\n")
	case rep.Busy > 0:
		fmt.Fprintf(&b, "%d conversations were busy with a turn: run wapipe migrate again\n", rep.Busy)
	case rep.Done:
		b.WriteString("done: the services no longer read the old ids\n")
	}
	return b.String()
}
