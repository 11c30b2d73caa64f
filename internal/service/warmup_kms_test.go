package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/secrets/kmsfake"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestWarmupSealsWithKMS (issue 35 item 8): a service that may seal (Options.WarmSeal) makes one
// KMS Encrypt per purpose while it warms up, on its own keeper; an answer from KMS, even a
// refusal (logged: sealing will fail), lets the service report ready, as its main routes do not
// need the key; KMS unreachable keeps it warming up.
func TestWarmupSealsWithKMS(t *testing.T) {
	t.Parallel()
	const key = "projects/p/locations/global/keyRings/wapipe/cryptoKeys/tenant-secrets"
	tests := []struct {
		name      string
		refuse    int // the next calls KMS answers 403
		down      bool
		wantReady bool
	}{
		{"sealed", 0, false, true},
		{"refused", 1, false, true},
		{"unreachable", 0, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := kmsfake.New()
			srv := fake.NewTestServer()
			t.Cleanup(srv.Close)
			if tc.refuse > 0 {
				fake.FailNext(tc.refuse, http.StatusForbidden)
			}
			if tc.down {
				srv.Close()
			}
			logs := &testenv.LogBuffer{}
			c, cleanup, err := service.Start(t.Context(), service.Options{Name: "test", Base: base(t), InProcess: true,
				Logger:   logging.New(logs, logging.Options{}),
				Keeper:   service.Keeper(secrets.Config{KMSKeyName: key, KMSEndpoint: srv.URL, HTTPClient: srv.Client()}),
				WarmSeal: []string{secrets.PurposeAccessToken}})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer cleanup()
			w := c.Warmup()
			ctx, cancel := context.WithCancel(t.Context())
			go w.Run(ctx)
			if tc.wantReady {
				<-w.Done()
			} else {
				testenv.Eventually(t, 20*time.Second, func() bool { return logs.Has("warmup_retry") }, "no warmup_retry line with KMS unreachable")
				cancel()
				<-w.Done()
			}
			cancel()
			if w.Ready() != tc.wantReady {
				t.Errorf("ready %v, want %v; logs:\n%s", w.Ready(), tc.wantReady, logs)
			}
			if !tc.down && fake.CallCount(kmsfake.MethodEncrypt) != 1 {
				t.Errorf("%d KMS encrypt calls, want 1", fake.CallCount(kmsfake.MethodEncrypt))
			}
			if refused := logs.Has("warmup_kms_refused"); refused != (tc.refuse > 0) {
				t.Errorf("warmup_kms_refused logged %v, want %v", refused, tc.refuse > 0)
			}
		})
	}
}
