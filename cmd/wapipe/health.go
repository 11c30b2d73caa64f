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

	"github.com/wapipe/wapipe/internal/ops"
)

const healthUsage = `Usage: wapipe health [flags]

GETs the worker's health report ({worker}/internal/health, with X-Internal-Token) and prints its
JSON. Exits 0 when its status is "ok", 1 when "degraded" or "failing" (with the reason on stderr).`

func runHealth(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("health", healthUsage)
	var (
		workerURL, token string
		timeout          time.Duration
	)
	fs.StringVar(&workerURL, "worker-url", env("INTERNAL_TASK_BASE_URL", "http://127.0.0.1:8081"), "the worker's base URL (env INTERNAL_TASK_BASE_URL)")
	fs.StringVar(&token, "token", "", "X-Internal-Token (default: env INTERNAL_TASK_TOKEN)")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of the request")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected argument %q", pos[0])
	}
	if token == "" {
		token = os.Getenv("INTERNAL_TASK_TOKEN")
	}
	if token == "" {
		return usageErrorf("no internal token: set INTERNAL_TASK_TOKEN or --token")
	}
	h, err := ops.FetchHealth(ctx, &http.Client{Timeout: timeout}, workerURL, token)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, h.Raw, "", "  "); err != nil {
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
