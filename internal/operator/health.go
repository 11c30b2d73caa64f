package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/health"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/tasks"
)

// HealthPath is the worker's health report route.
const HealthPath = "/internal/health"

// Health is the worker's health report: its verdict, and the whole answer as sent.
type Health struct {
	// HTTPStatus is the worker's status code (200 for ok or degraded, 503 for failing).
	HTTPStatus int
	Status     string
	Reason     string
	// Raw is the JSON answer.
	Raw json.RawMessage
}

// FetchHealth asks the worker for its health report.
func FetchHealth(ctx context.Context, client *http.Client, workerURL, token string) (Health, error) {
	url := strings.TrimRight(workerURL, "/") + HealthPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Health{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set(tasks.HeaderInternalToken, token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Health{}, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Health{}, fmt.Errorf("read the health report: %w", err)
	}
	h := Health{HTTPStatus: resp.StatusCode, Raw: raw}
	var v struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return h, fmt.Errorf("GET %s: %s, and the answer is not JSON", url, resp.Status)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return h, fmt.Errorf("GET %s: 401: the worker refused the internal token (check INTERNAL_TASK_TOKEN or --token)", url)
	case resp.StatusCode == http.StatusNotFound:
		return h, fmt.Errorf("GET %s: 404: the worker has no health report (%s)", url, or(v.Error, "route missing"))
	case v.Status == "":
		return h, fmt.Errorf("GET %s: %s, with no status in the answer", url, resp.Status)
	}
	h.Status, h.Reason = v.Status, v.Reason
	return h, nil
}

// ComputeHealth computes the health report here, as the worker would, from Cloud Tasks queue
// stats and Firestore count aggregations.
func ComputeHealth(ctx context.Context, c Conn, inboundQueue, outboundQueue string) (Health, error) {
	db, err := c.Store(ctx)
	if err != nil {
		return Health{}, err
	}
	defer db.Close()
	queues, err := c.Queues(ctx)
	if err != nil {
		return Health{}, err
	}
	defer queues.Close()
	tenants := store.NewTenants(db, store.Options{})
	checker := health.New(store.NewOutbound(db, store.Options{}), store.NewDeadLetters(db, store.Options{}), queues,
		[]string{queues.QueuePath(inboundQueue), queues.QueuePath(outboundQueue)},
		health.Options{Reauth: tenants, Quota: store.QuotaReport{Tenants: tenants, Guard: store.NewGuard(db, store.Options{})}})
	// A part that could not be read is in the verdict already (failing, with the reason).
	rep, _ := checker.Check(ctx)
	raw, err := json.Marshal(rep)
	if err != nil {
		return Health{}, fmt.Errorf("encode the health report: %w", err)
	}
	return Health{HTTPStatus: http.StatusOK, Status: rep.Status, Reason: rep.Reason, Raw: raw}, nil
}
