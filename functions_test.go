package wapipe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	"google.golang.org/api/iterator"

	"github.com/wapipe/wapipe/internal/firestoreemu"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

func TestLazyRetriesAFailedBuild(t *testing.T) {
	calls := 0
	h := lazy("test", func(context.Context) (http.Handler, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("WHATSAPP_APP_SECRET: missing required value")
		}
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }), nil
	})
	for i, want := range []int{500, 418, 418} {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != want {
			t.Errorf("request %d: %d, want %d", i+1, rec.Code, want)
		}
	}
	if calls != 2 {
		t.Errorf("built %d times, want 2 (once failing, once for good)", calls)
	}
}

// TestWebhookFunction serves the Webhook entry point through the Functions Framework, as Cloud
// Functions would, against the emulators: the handshake and a signed delivery that becomes a task.
func TestWebhookFunction(t *testing.T) {
	testenv.FirestoreHost(t)
	project := testenv.ProjectID(t)
	emu, tc := testenv.Tasks(t, project, "us-central1", nil)
	queue := "projects/" + project + "/locations/us-central1/queues/" + tasks.InboundQueueID
	if _, err := tc.PauseQueue(context.Background(), &cloudtaskspb.PauseQueueRequest{Name: queue}); err != nil {
		t.Fatal(err)
	}
	port, err := firestoreemu.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"FUNCTION_TARGET": "Webhook", "APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": project, "TASKS_LOCATION": "us-central1",
		"CLOUD_TASKS_EMULATOR_HOST": emu.Addr(), "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:1", "INTERNAL_TASK_TOKEN": "tok",
		"WHATSAPP_APP_SECRET": "fn-secret", "WHATSAPP_VERIFY_TOKEN": "fn-verify",
	} {
		t.Setenv(k, v)
	}
	// The framework serves until the process ends: the test binary's end stops it.
	go func() { _ = funcframework.StartHostPort("127.0.0.1", strconv.Itoa(port)) }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)

	var challenge string
	testenv.Eventually(t, 10*time.Second, func() bool {
		resp, err := http.Get(base + webhook.Path + "?hub.mode=subscribe&hub.verify_token=fn-verify&hub.challenge=4242")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		challenge = string(b)
		return resp.StatusCode == 200
	}, "the Webhook function never answered the handshake")
	if challenge != "4242" {
		t.Fatalf("handshake answered %q", challenge)
	}

	body := whatsapp.SampleText(whatsapp.SampleOptions{}, "hello")
	req, _ := http.NewRequest(http.MethodPost, base+webhook.Path, bytes.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", webhook.Sign(body, "fn-secret"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST through the function = %d", resp.StatusCode)
	}
	it := tc.ListTasks(context.Background(), &cloudtaskspb.ListTasksRequest{Parent: queue})
	n := 0
	for {
		_, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d inbound tasks, want 1", n)
	}
}
