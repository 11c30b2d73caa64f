package setup

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/wapipe/wapipe/internal/logging"
)

// Main runs a service's realMain the way every wapipe binary does: a context that ends on SIGINT
// or SIGTERM (Cloud Run's stop signal), and on failure or panic one clear JSON log line and a
// non-zero exit.
func Main(name string, realMain func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, name+" panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, name+": "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}
