// Command functions serves wapipe's Cloud Functions entry points locally through the Functions
// Framework, as Cloud Functions would: FUNCTION_TARGET=Webhook or Worker selects the handler, PORT
// (default 8080) the port, and the rest of the environment is the service's own.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	_ "github.com/wapipe/wapipe" // registers Webhook and Worker
	"github.com/wapipe/wapipe/internal/logging"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	logger := logging.New(os.Stdout, logging.Options{})
	defer func() {
		if r := recover(); r != nil {
			logger.Log(ctx, logging.LevelCritical, "functions panicked", "panic", r)
			os.Exit(2)
		}
	}()
	err := realMain(ctx)
	stop()
	if err != nil {
		logger.Log(ctx, logging.LevelCritical, "functions: "+err.Error(), "event", "startup_failed")
		os.Exit(1)
	}
}

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
