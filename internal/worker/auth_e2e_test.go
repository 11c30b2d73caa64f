package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/internal/worker"
	"github.com/wapipe/wapipe/tasks"
)

// TestRouteCallersThroughTheEmulator (issue 35 item 6): the route table's checks meet the tasks
// as Cloud Tasks dispatches them (here the emulator: an OIDC token for the task's account, and
// X-CloudTasks-QueueName the queue's id, as Cloud Tasks sends it). With ROUTE_CALLERS set, a
// delivery's inbound task (wa-inbound) and its reply's task (wa-outbound) pass, and the reply is
// sent once; when process_inbound admits another account, the inbound task is refused
// (auth_refused, reason caller) on every attempt and nothing is sent.
func TestRouteCallersThroughTheEmulator(t *testing.T) {
	t.Parallel()
	const invoker = "invoker@wapipe-dev.iam.gserviceaccount.com"
	for _, tc := range []struct {
		name, inboundCaller string
		sends               int
	}{
		{"every route for the stack's account", invoker, 1},
		{"process_inbound for another account", "someone-else@wapipe-dev.iam.gserviceaccount.com", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{serviceAccount: invoker, config: func(c *worker.Config) {
				c.RouteCallers = tasks.CallersOf(func(tasks.Caller, tasks.Via) string { return invoker })
				c.RouteCallers[tasks.ProcessInboundPath] = []string{tc.inboundCaller}
			}})
			s.deliver(whatsapp.SampleBatch(whatsapp.SampleOptions{}, 1))
			if tc.sends > 0 {
				s.waitSends(tc.sends)
			} else {
				testenv.Eventually(t, 20*time.Second, func() bool {
					return strings.Contains(s.logs.String(), `"reason":"caller"`)
				}, "the inbound task was never refused")
			}
			s.idle() // the refused task runs out of attempts (testenv.FastQueues)
			if n := len(s.Graph.Sends()); n != tc.sends {
				t.Errorf("%d sends, want %d", n, tc.sends)
			}
			for _, line := range strings.Split(s.logs.String(), "\n") {
				if !strings.Contains(line, `"event":"auth_refused"`) {
					continue
				}
				if tc.sends > 0 || !strings.Contains(line, `"route":"`+tasks.ProcessInboundPath+`"`) ||
					!strings.Contains(line, `"queue":"`+tasks.InboundQueueID+`"`) {
					t.Errorf("refused: %s", line)
				}
			}
		})
	}
}
