// Command worker is the private Cloud Run service Cloud Tasks calls: it fans inbound events out
// into one outbound task per message and sends each reply through the Graph API exactly once.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/setup"
	"github.com/wapipe/wapipe/internal/worker"
)

func main() { setup.Main("worker", realMain) }

func realMain(ctx context.Context) error {
	var cfg worker.Config
	if err := setup.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	return worker.Run(ctx, &cfg, nil, cfg.Logger())
}
