package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/wapipe/wapipe/internal/operator"
)

const healthUsage = `Usage: wapipe health [flags]

GETs the worker's health report ({worker}/internal/health, with X-Internal-Token) and prints its
JSON. Exits 0 when its status is "ok", 1 when "degraded" or "failing" (with the reason on stderr).

With --direct it computes the same report here instead, from Cloud Tasks queue stats and Firestore
count aggregations (Application Default Credentials, or the emulators): the production worker takes
internal traffic only, so this is the way from an operator's machine.`

func runHealth(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("health", healthUsage)
	var (
		workerURL, token string
		timeout          time.Duration
	)
	fs.StringVar(&workerURL, "worker-url", env("INTERNAL_TASK_BASE_URL", "http://127.0.0.1:8081"), "the worker's base URL (env INTERNAL_TASK_BASE_URL)")
	fs.StringVar(&token, "token", "", "X-Internal-Token (default: env INTERNAL_TASK_TOKEN)")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of the request")
	var direct bool
	var conn connFlags
	var queues queueFlags
	fs.BoolVar(&direct, "direct", false, "compute the report here from Cloud Tasks and Firestore instead of asking the worker")
	conn.register(fs)
	queues.register(fs)
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected argument %q", pos[0])
	}
	if direct {
		if err := conn.resolve(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		rep, err := operator.ComputeHealth(ctx, conn.conn, queues.inbound, queues.outbound)
		if err != nil {
			return err
		}
		return printHealth(stdout, rep)
	}
	if token == "" {
		token = os.Getenv("INTERNAL_TASK_TOKEN")
	}
	if token == "" {
		return usageErrorf("no internal token: set INTERNAL_TASK_TOKEN or --token")
	}
	h, err := operator.FetchHealth(ctx, &http.Client{Timeout: timeout}, workerURL, token)
	if err != nil {
		return err
	}
	return printHealth(stdout, h)
}

// printHealth prints the report and turns its verdict into the exit status.
func printHealth(stdout io.Writer, h operator.Health) error {
	rounded, err := operator.RoundFloats(h.Raw)
	if err != nil {
		return fmt.Errorf("format the health report: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, rounded, "", "  "); err != nil {
		return fmt.Errorf("format the health report: %w", err)
	}
	buf.WriteByte('\n')
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if h.Status != "ok" {
		return exitError{code: 1, msg: fmt.Sprintf("wapipe is %s: %s", h.Status, h.Reason)}
	}
	return nil
}
