package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/wapipe/wapipe/internal/health"
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
	checker := health.ForStore(db, queues, []string{queues.QueuePath(inboundQueue), queues.QueuePath(outboundQueue)})
	// A part that could not be read is in the verdict already (failing, with the reason).
	rep, _ := checker.Check(ctx)
	raw, err := json.Marshal(rep)
	if err != nil {
		return Health{}, fmt.Errorf("encode the health report: %w", err)
	}
	return Health{HTTPStatus: http.StatusOK, Status: rep.Status, Reason: rep.Reason, Raw: raw}, nil
}

// RoundFloats returns the JSON document raw with every fractional number rounded to three
// decimal places (a p95 of 242.49999999999997 reads 242.5; a success rate of 0.99671 keeps
// 0.997, never a misleading 1), keys and their order unchanged. Integers and strings are left
// as they are.
func RoundFloats(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	// Each open object or array counts the tokens written in it, to place ',' and ':'.
	type frame struct {
		object bool
		n      int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the JSON document: %w", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b.WriteByte(byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				b.WriteByte(':')
			case top.n > 0:
				b.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			stack = append(stack, frame{object: v == '{'})
			b.WriteByte(byte(v))
		case json.Number:
			b.WriteString(roundNumber(v))
		default: // string, bool, nil
			var enc bytes.Buffer
			e := json.NewEncoder(&enc)
			e.SetEscapeHTML(false)
			if err := e.Encode(v); err != nil {
				return nil, fmt.Errorf("encode %v: %w", v, err)
			}
			b.Write(bytes.TrimSuffix(enc.Bytes(), []byte("\n")))
		}
	}
	return b.Bytes(), nil
}

func roundNumber(n json.Number) string {
	if !strings.ContainsAny(string(n), ".eE") {
		return string(n)
	}
	f, err := n.Float64()
	if err != nil {
		return string(n)
	}
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}
