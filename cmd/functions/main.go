// Command functions serves wapipe's Cloud Functions entry points locally through the Functions
// Framework, as Cloud Functions would: FUNCTION_TARGET=Webhook or Worker selects the handler, PORT
// (default 8080) the port, and the rest of the environment is the service's own.
package main

import (
	"context"
	"errors"
	"os"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/wapipe/wapipe" // registers Webhook and Worker
	"github.com/wapipe/wapipe/internal/service"
)

func main() { service.Main("functions", realMain) }

func realMain(context.Context) error {
	if os.Getenv("FUNCTION_TARGET") == "" {
		return errors.New("FUNCTION_TARGET: set it to Webhook or Worker")
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	return funcframework.StartHostPort(host, port)
}
