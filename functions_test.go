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
	"sync"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	"github.com/wapipe/wapipe/internal/cloudtasksemu"
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

// function is the Functions Framework serving the Webhook entry point, started once per test
// binary: the framework serves until the process ends, and the entry point builds its clients
// once, so the emulator it talks to must outlive any one test.
var function struct {
	once    sync.Once
	base    string
	project string
	tc      *cloudtasks.Client
	err     error
}

func startFunction(t *testing.T) {
	t.Helper()
	testenv.FirestoreHost(t)
	function.once.Do(func() {
		project := "wapipe-functions-test"
		emu, err := cloudtasksemu.Start(context.Background(), cloudtasksemu.Options{Project: project, Location: "us-central1", Queues: tasks.DefaultQueues()})
		if err != nil {
			function.err = err
			return
		}
		tc, err := cloudtasksemu.NewClient(context.Background(), emu.Addr())
		if err != nil {
			function.err = err
			return
		}
		queue := "projects/" + project + "/locations/us-central1/queues/" + tasks.InboundQueueID
		if _, err := tc.PauseQueue(context.Background(), &cloudtaskspb.PauseQueueRequest{Name: queue}); err != nil {
			function.err = err
			return
		}
		port, err := firestoreemu.FreePort()
		if err != nil {
			function.err = err
			return
		}
		for k, v := range map[string]string{
			"FUNCTION_TARGET": "Webhook", "APP_ENV": "dev", "GOOGLE_CLOUD_PROJECT": project, "TASKS_LOCATION": "us-central1",
			"CLOUD_TASKS_EMULATOR_HOST": emu.Addr(), "INTERNAL_TASK_BASE_URL": "http://127.0.0.1:1", "INTERNAL_TASK_TOKEN": "tok",
			"WHATSAPP_APP_SECRET": "fn-secret", "WHATSAPP_VERIFY_TOKEN": "fn-verify",
		} {
			os.Setenv(k, v)
		}
		go func() { _ = funcframework.StartHostPort("127.0.0.1", strconv.Itoa(port)) }()
		function.base, function.project, function.tc = "http://127.0.0.1:"+strconv.Itoa(port), project, tc
	})
	if function.err != nil {
		t.Fatalf("start the Webhook function: %v", function.err)
	}
}

// TestWebhookFunction serves the Webhook entry point through the Functions Framework, as Cloud
// Functions would, against the emulators: the handshake and a signed delivery that becomes a task.
func TestWebhookFunction(t *testing.T) {
	startFunction(t)
	base := function.base
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

	msgID := whatsapp.NewMessageID()
	body := whatsapp.SampleText(whatsapp.SampleOptions{MessageID: msgID}, "hello")
	req, _ := http.NewRequest(http.MethodPost, base+webhook.Path, bytes.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, "fn-secret"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST through the function = %d", resp.StatusCode)
	}
	name := "projects/" + function.project + "/locations/us-central1/queues/" + tasks.InboundQueueID + "/tasks/" + tasks.InboundTaskID(msgID)
	if _, err := function.tc.GetTask(context.Background(), &cloudtaskspb.GetTaskRequest{Name: name}); err != nil {
		t.Fatalf("the delivery's inbound task: %v", err)
	}
}
