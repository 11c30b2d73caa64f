package devstack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/config"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/taskqueue"
	"github.com/wapipe/wapipe/internal/workerclient"
)

// DevMetaAppID and DevMetaConfigID are the Embedded Signup settings of the local stack: the
// fake Graph API's dialog accepts any.
const (
	DevMetaAppID    = "100000000000001"
	DevMetaConfigID = "dev-config"
)

// startAPI starts the api service (cmd/api) on o.APIAddr, wired to the fake Graph API and its
// dialog, sharing the other services' Firestore, tasks and development key.
func (s *Stack) startAPI(ctx, runCtx context.Context, o Options, base config.Base, db *store.DB, tq *taskqueue.Client, logs func(string) io.Writer) error {
	ln, err := net.Listen("tcp", orFree(o.APIAddr))
	if err != nil {
		return fmt.Errorf("listen for the api: %w", err)
	}
	s.APIURL = "http://" + ln.Addr().String()
	cfg := &api.Config{Base: base, GraphAPIBaseURL: s.GraphURL, MetaAppID: DevMetaAppID, MetaConfigID: DevMetaConfigID,
		PublicBaseURL: s.APIURL, AppSecret: DevAppSecret,
		FacebookDialogURL: strings.TrimSuffix(s.GraphURL, "/"+graph.Version) + "/dialog/oauth"}
	if err := cfg.Validate(); err != nil {
		ln.Close()
		return err
	}
	keeper, err := cfg.OpenKeeper(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	s.closers = append(s.closers, func() { keeper.Close() })
	alog := logging.New(logs("api"), logging.Options{Level: o.LogLevel, ProjectID: o.Project, Hasher: base.Hasher()})
	deps, err := api.NewDeps(cfg, db, tq, keeper, alog)
	if err != nil {
		ln.Close()
		return err
	}
	deps.Worker = s.workerClient()
	for _, adjust := range o.API {
		adjust(&deps)
	}
	s.serve(runCtx, "api", ln, s.startup.Handler(api.NewServer(cfg, deps).Routes()), alog)
	return nil
}

// workerClient is the client of the stack's worker tenant routes: the internal token, no ID
// token (dev).
func (s *Stack) workerClient() *workerclient.Client {
	return workerclient.NewWithHTTPClient(s.WorkerURL, DevInternalToken, http.DefaultClient)
}
