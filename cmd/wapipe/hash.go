package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/logging"
)

const hashPhoneUsage = `Usage: wapipe hash-phone NUMBER

Prints the ph_ ref that stands for a phone number in wapipe's logs and records (outbound records'
to_hash, statuses' recipient_hash): an HMAC-SHA256 with LOG_HASH_KEY, the key the services use.
Spaces, dashes and a leading + are ignored. Search the logs for the ref to follow one customer.
The ref is the last line of the output.`

const hashIDUsage = `Usage: wapipe hash-id ID

Prints the ref that stands for an id in wapipe's logs, an HMAC-SHA256 with LOG_HASH_KEY, the key
the services use:
  - a wamid, an inbound_event_id, a Graph message id: ref_… (event_ref and message_ref);
  - a business-scoped user id (US.1349…) or a parent one (US.ENT.…): us_…, the ref of a person
    known by it (to_user, recipient_user, previous_user…);
  - a username, written with its @ (@julian): un_….
Search the logs for it, or pass a ref_ to wapipe inspect. The ref is the last line of the output.`

func runHashPhone(_ context.Context, args []string, stdout, stderr io.Writer) error {
	return runHash("hash-phone", hashPhoneUsage, "NUMBER", args, stdout, stderr, func(h *logging.Hasher, v string) (string, error) {
		if len(logging.NormalizePhone(v)) < 5 {
			return "", usageErrorf("%q is not a phone number", v)
		}
		return h.Phone(v), nil
	})
}

func runHashID(_ context.Context, args []string, stdout, stderr io.Writer) error {
	return runHash("hash-id", hashIDUsage, "ID", args, stdout, stderr, func(h *logging.Hasher, v string) (string, error) {
		switch {
		case contact.ValidUserID(v) || contact.ValidParentUserID(v):
			return h.User(v), nil
		case strings.HasPrefix(v, "@") && len(v) > 1:
			return h.Username(v), nil
		}
		return h.Ref(v), nil
	})
}

func runHash(cmd, usage, what string, args []string, stdout, stderr io.Writer, ref func(*logging.Hasher, string) (string, error)) error {
	fs := newFlagSet(cmd, usage)
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return usageErrorf("want exactly one %s, got %d argument(s)", what, len(pos))
	}
	h, err := hasherFromEnv(stderr)
	if err != nil {
		return err
	}
	r, err := ref(h, pos[0])
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, r)
	return err
}

// hasherFromEnv returns the Hasher of LOG_HASH_KEY, which must be the deployment's. Without it,
// the dev default serves the local stack; a note on stderr says so, as refs made with it match
// nothing in staging or prod. APP_ENV staging or prod makes the key required, as in the services.
func hasherFromEnv(stderr io.Writer) (*logging.Hasher, error) {
	key, appEnv := os.Getenv("LOG_HASH_KEY"), os.Getenv("APP_ENV")
	if key == "" && appEnv == "" {
		appEnv = "dev"
		fmt.Fprintln(stderr, "wapipe: LOG_HASH_KEY is not set: using the dev default key (refs match the local stack only)")
	}
	h, err := logging.HasherFromEnv(key, appEnv)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return h, nil
}
