package main

import (
	"os"
	"testing"

	"github.com/wapipe/wapipe/internal/service/servicetest"
	"github.com/wapipe/wapipe/internal/testenv"
	"github.com/wapipe/wapipe/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFirestore(m)) }

// TestStartupProbe (issue 35 item 8): the webhook, started as its main starts it, answers the
// startup-only probe (service.StartupPath) 200 once its clients are warm, and /healthz 200.
func TestStartupProbe(t *testing.T) {
	t.Parallel()
	servicetest.CheckProbes(t, &webhook.Config{}, servicetest.Env(t, map[string]string{"WHATSAPP_APP_SECRET": "app-secret", "WHATSAPP_VERIFY_TOKEN": "verify"}), realMain)
}
