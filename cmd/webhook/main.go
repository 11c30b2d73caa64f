// Command webhook is the public Cloud Run service Meta calls with WhatsApp webhooks.
package main

import (
	"context"

	"github.com/wapipe/wapipe/internal/setup"
	"github.com/wapipe/wapipe/internal/webhook"
)

func main() { setup.Main("webhook", realMain) }

func realMain(ctx context.Context) error {
	var cfg webhook.Config
	if err := setup.Load(ctx, nil, &cfg); err != nil {
		return err
	}
	return webhook.Run(ctx, &cfg, nil, cfg.Logger())
}
