// Command wapipe is the operator's CLI for a wapipe deployment or the local stack (cmd/devstack):
//
//	wapipe trigger   sign and post realistic Meta webhook payloads to the webhook
//	wapipe inspect   follow one event: dedupe marker, trace, outbound record, statuses, dead letters, queued tasks
//	wapipe tasks     list or describe the tasks of a queue, like gcloud tasks list/describe
//	wapipe replay    re-enqueue dead letters, never answering twice
//	wapipe bench     load the webhook (loopback only by default) and measure it, end to end with the fake Graph API
//	wapipe health    print the worker's health report; exit 1 unless it is ok
//	wapipe hash-phone print the keyed ref (ph_…) of a phone number, to find it in logs and records
//	wapipe hash-id   print the keyed ref (event_ref, message_ref) of a wamid or inbound_event_id
//	wapipe tenants   apply tenant files (GitOps), list, show, set-token, invite
//	wapipe send      send a message on a tenant's behalf through the api, as a business does
//	wapipe migrate   carry the documents about people over to their contacts' keyed ids
//
// Every subcommand has --help. Connection settings come from flags with the services' environment
// variables as fallbacks (GOOGLE_CLOUD_PROJECT, TASKS_LOCATION, CLOUD_TASKS_EMULATOR_HOST,
// FIRESTORE_EMULATOR_HOST, FIRESTORE_DATABASE, INTERNAL_TASK_BASE_URL, INTERNAL_TASK_TOKEN,
// LOG_HASH_KEY). When none of GOOGLE_CLOUD_PROJECT, FIRESTORE_EMULATOR_HOST and
// CLOUD_TASKS_EMULATOR_HOST is set (nor --project or an emulator flag given) and a devstack runs,
// its environment file (internal/devenv) supplies them and says so on stderr. An error is one
// line on stderr and a non-zero exit: 2 for a usage error, 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wapipe/wapipe/internal/devenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "wapipe: panic: %v\n", r)
			os.Exit(2)
		}
	}()
	// Beside a running devstack the CLI needs no exports: the stack's file fills in what the
	// environment lacks (explicit variables win; see internal/devenv). A command line that names
	// its project or emulators chose its stack itself.
	if !namesStack(os.Args[1:]) {
		if used, err := devenv.Fill(os.Getenv, os.Setenv); err != nil {
			fmt.Fprintln(os.Stderr, "wapipe: "+oneLine(err.Error()))
		} else if used != "" {
			fmt.Fprintf(os.Stderr, "wapipe: using the running devstack's environment from %s\n", used)
		}
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wapipe: "+oneLine(err.Error()))
		os.Exit(exitCode(err))
	}
}

// namesStack reports whether args set --project, --tasks-emulator or --firestore-emulator.
func namesStack(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "project" || name == "tasks-emulator" || name == "firestore-emulator") {
			return true
		}
	}
	return false
}

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"trigger", "sign and post realistic Meta webhook payloads to the webhook", runTrigger},
		{"inspect", "show what wapipe knows about an inbound_event_id, message id or event_ref", runInspect},
		{"tasks", "list or describe the tasks of a queue (like gcloud tasks list/describe)", runTasks},
		{"replay", "re-enqueue dead letters without creating duplicates", runReplay},
		{"bench", "load the webhook and measure answer times (and end to end with the fake Graph API)", runBench},
		{"health", "print the worker's health report; exit 1 unless it is ok", runHealth},
		{"hash-phone", "print the keyed ref (ph_…) of a phone number, as logs and records carry it", runHashPhone},
		{"hash-id", "print the keyed ref (event_ref, message_ref) of a wamid or inbound_event_id", runHashID},
		{"tenants", "apply tenant files; list, show, set-token, invite", runTenants},
		{"send", "send a message on a tenant's behalf through the api (text, image, document, location, template)", runSend},
		{"migrate", "carry the documents about people over to their contacts' keyed ids (--rekey after a key rotation)", runMigrate},
	}
}

// run is the whole CLI; main only adds signals and the exit code. Tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		writeUsage(stderr)
		return usageErrorf("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		writeUsage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if errors.Is(err, errHelp) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
		}
	}
	return usageErrorf("unknown command %q (see wapipe --help)", args[0])
}

func writeUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("wapipe: operate wapipe (the local stack or a deployment)\n\nUsage: wapipe COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun wapipe COMMAND --help for a command's flags.\n")
	io.WriteString(w, b.String())
}

// errHelp ends a command after its --help was printed.
var errHelp = errors.New("help shown")

// usageError is a command line the CLI cannot run; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code other than 1 or 2's meaning (health's verdicts).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	var x exitError
	if errors.As(err, &x) {
		return x.code
	}
	return 1
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// flagSet is a subcommand's flags and the usage text its --help prints above them.
type flagSet struct {
	*flag.FlagSet
	cmd, usage string
}

// newFlagSet returns a flag set that reports errors to the caller instead of printing them.
func newFlagSet(cmd, usage string) *flagSet {
	fs := flag.NewFlagSet("wapipe "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, cmd: cmd, usage: usage}
}

// parse parses args, allowing flags after positional arguments (wapipe inspect ID --json), and
// returns the positional arguments. --help prints the usage to stdout and returns errHelp.
func (fs *flagSet) parse(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp(stdout)
				return nil, errHelp
			}
			return nil, usageErrorf("%v (see wapipe %s --help)", err, fs.cmd)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func (fs *flagSet) printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(fs.usage) + "\n\nFlags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	io.WriteString(w, b.String())
}

// env returns the environment variable key, or def when it is unset or empty.
func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
