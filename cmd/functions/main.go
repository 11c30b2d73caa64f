// Command functions serves wapipe's Cloud Functions entry points locally through the Functions
// Framework, as Cloud Functions would: FUNCTION_TARGET=Webhook or Worker selects the handler, PORT
// (default 8080) the port, and the rest of the environment is the service's own.
package main

import (
	"context"
	"fmt"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/wapipe/wapipe" // registers Webhook and Worker
	"github.com/wapipe/wapipe/internal/service"
)

// config is what the Functions Framework reads; the entry point reads its service's own.
type config struct {
	Target string `env:"FUNCTION_TARGET"`
	Port   string `env:"PORT, default=8080"`
	Host   string `env:"HOST, default=127.0.0.1"`
}

// Validate names the entry points FUNCTION_TARGET may select.
func (c *config) Validate() error {
	if c.Target != "Webhook" && c.Target != "Worker" {
		return fmt.Errorf("FUNCTION_TARGET: set it to Webhook or Worker, got %q", c.Target)
	}
	return nil
}

func main() { service.Main("functions", &config{}, realMain) }

func realMain(_ context.Context, cfg *config) error {
	return funcframework.StartHostPort(cfg.Host, cfg.Port)
}
