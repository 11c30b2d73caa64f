package cloudtasksemu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	betapb "cloud.google.com/go/cloudtasks/apiv2beta3/cloudtaskspb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/tasks"
)

// Options configure Start. The zero value is usable: a free port, no queues.
type Options struct {
	// Addr is the host:port to listen on; "127.0.0.1:0" (the default) picks a free port.
	Addr string
	// Project and Location place Queues: projects/<Project>/locations/<Location>/queues/<id>.
	// Other projects and locations can still be used through the API.
	Project, Location string
	// Queues are created at start; nil means none.
	Queues *tasks.QueueFile
	// NameReservation is how long a named task's id stays taken after the task completed or was
	// deleted (and a deleted queue's name), so re-creating it answers AlreadyExists as in
	// production. Zero means one hour, Cloud Tasks' default; negative disables it.
	NameReservation time.Duration
	// MinDispatchDeadline is the shortest dispatch_deadline CreateTask accepts. Zero means 15s, as
	// Cloud Tasks enforces; tests of deadline handling may lower it.
	MinDispatchDeadline time.Duration
	// HTTPClient sends the tasks. Nil means a client tuned for many small requests to few hosts,
	// which does not follow redirects (Cloud Tasks counts a 3xx as a failure).
	HTTPClient *http.Client
	// Logger receives the emulator's logs; nil discards them.
	Logger *slog.Logger
}

// Server is a running emulator.
type Server struct {
	opts   Options
	addr   string
	log    *slog.Logger
	client *http.Client
	owns   bool // client was built here, so Stop closes its idle connections
	issuer *issuer

	ctx    context.Context // cancelled by Stop: ends schedulers and in-flight dispatches
	cancel context.CancelFunc

	grpcSrv *grpc.Server
	httpSrv *http.Server
	ln      net.Listener // the splitListener once serving

	life    sync.Mutex
	stopped bool
	wg      sync.WaitGroup

	mu         sync.RWMutex
	queues     map[string]*queue // by full name
	queueTombs map[string]int64  // deleted queue names -> expiry
	stopOnce   sync.Once
}

// Start listens on opts.Addr, creates opts.Queues and serves until Stop or until ctx ends.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.NameReservation == 0 {
		opts.NameReservation = time.Hour
	}
	if opts.MinDispatchDeadline == 0 {
		opts.MinDispatchDeadline = 15 * time.Second
	}
	if opts.Queues != nil && (opts.Project == "" || opts.Location == "") {
		return nil, errors.New("tasksemu: Options.Project and Options.Location are required with Queues")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client, owns := opts.HTTPClient, false
	if client == nil {
		client, owns = newDispatchClient(), true
	}

	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	addr := ln.Addr().String()
	iss, err := newIssuer("http://" + addr)
	if err != nil {
		ln.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{
		opts:       opts,
		addr:       addr,
		log:        log,
		client:     client,
		owns:       owns,
		issuer:     iss,
		ctx:        sctx,
		cancel:     cancel,
		ln:         ln,
		queues:     make(map[string]*queue),
		queueTombs: make(map[string]int64),
	}

	if opts.Queues != nil {
		parent := "projects/" + opts.Project + "/locations/" + opts.Location
		if _, _, err := parseParent(parent); err != nil {
			ln.Close()
			cancel()
			return nil, fmt.Errorf("tasksemu: project %q, location %q: %w", opts.Project, opts.Location, err)
		}
		for _, id := range opts.Queues.IDs() {
			if _, err := s.createQueue(parent+"/queues/"+id, configFromFile(opts.Queues.Queues[id])); err != nil {
				s.Stop()
				return nil, fmt.Errorf("create queue %s: %w", id, err)
			}
		}
	}

	nQueues := len(s.queues) // read before any RPC can create one
	s.grpcSrv = grpc.NewServer()
	cloudtaskspb.RegisterCloudTasksServer(s.grpcSrv, &v2Service{s: s})
	betapb.RegisterCloudTasksServer(s.grpcSrv, &betaService{s: s})
	s.httpSrv = &http.Server{Handler: iss.handler(), ReadHeaderTimeout: 10 * time.Second}

	sl := &splitListener{
		Listener: ln,
		grpc:     newChanListener(ln.Addr()),
		http:     newChanListener(ln.Addr()),
		track:    s.goTracked,
	}
	s.ln = sl
	s.goTracked(sl.serve)
	s.goTracked(func() { _ = s.grpcSrv.Serve(sl.grpc) })
	s.goTracked(func() { _ = s.httpSrv.Serve(sl.http) })
	if ctx.Done() != nil {
		s.goTracked(func() {
			select {
			case <-ctx.Done():
				go s.Stop() // Stop waits for this goroutine, so it cannot run here
			case <-sctx.Done():
			}
		})
	}
	log.Info("cloud tasks emulator listening", slog.String("event", "emulator_started"),
		slog.String("addr", addr), slog.Int("queues", nQueues))
	return s, nil
}

// newDispatchClient is a client for many small requests to a handful of local hosts: idle
// connections are kept per host in numbers that match max_concurrent_dispatches, and redirects are
// not followed because Cloud Tasks treats a 3xx as a failed attempt.
func newDispatchClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Addr is the host:port the emulator serves on: the value for CLOUD_TASKS_EMULATOR_HOST.
func (s *Server) Addr() string { return s.addr }

// IssuerURL is the issuer of the OIDC tokens the emulator attaches to tasks: "http://"+Addr().
// Its discovery document is at IssuerURL()+"/.well-known/openid-configuration".
func (s *Server) IssuerURL() string { return s.issuer.url }

// Stop closes the port (gRPC and HTTP), cancels the requests in flight, and returns once every
// goroutine the emulator started has ended: no task is dispatched after Stop returns.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.life.Lock()
		s.stopped = true
		s.life.Unlock()
		s.cancel()
		s.ln.Close()
		if s.grpcSrv != nil {
			s.grpcSrv.Stop()
		}
		if s.httpSrv != nil {
			s.httpSrv.Close()
		}
		s.wg.Wait()
		if s.owns {
			s.client.CloseIdleConnections()
		}
		s.log.Info("cloud tasks emulator stopped", slog.String("event", "emulator_stopped"))
	})
}

// goTracked runs f in a goroutine Stop waits for, unless the emulator is stopping.
func (s *Server) goTracked(f func()) bool {
	s.life.Lock()
	if s.stopped {
		s.life.Unlock()
		return false
	}
	s.wg.Add(1)
	s.life.Unlock()
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}

// configFromFile turns a queues.yaml definition into a queue configuration.
func configFromFile(q tasks.Queue) queueConfig {
	rc := q.RetryConfig
	return queueConfig{
		rate:          q.RateLimits.MaxDispatchesPerSecond,
		burst:         maxBurstSize(q.RateLimits.MaxDispatchesPerSecond),
		maxConcurrent: q.RateLimits.MaxConcurrentDispatches,
		retry: retryPolicy{
			maxAttempts:      rc.MaxAttempts,
			minBackoff:       rc.MinBackoff.Duration,
			maxBackoff:       rc.MaxBackoff.Duration,
			maxDoublings:     rc.MaxDoublings,
			maxRetryDuration: rc.MaxRetryDuration.Duration,
		},
		samplingRatio: q.StackdriverLogging.SamplingRatio,
	}
}

// createQueue registers a queue and starts its scheduler.
func (s *Server) createQueue(name string, cfg queueConfig) (*queue, error) {
	_, id, err := parseQueueName(name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; ok {
		return nil, status.Error(codes.AlreadyExists, msgQueueExists)
	}
	if exp, ok := s.queueTombs[name]; ok {
		if exp > now.UnixNano() {
			return nil, status.Error(codes.FailedPrecondition, msgQueueTooRecent)
		}
		delete(s.queueTombs, name)
	}
	q := newQueue(name, id, cfg, now)
	qctx, cancel := context.WithCancel(s.ctx)
	q.cancel = cancel
	if !s.goTracked(func() { s.run(qctx, q) }) {
		cancel()
		return nil, status.Error(codes.Unavailable, "the emulator is stopping")
	}
	s.queues[name] = q
	return q, nil
}

// queue returns a queue by full name, or NotFound.
func (s *Server) queue(name string) (*queue, error) {
	if _, _, err := parseQueueName(name); err != nil {
		return nil, err
	}
	s.mu.RLock()
	q, ok := s.queues[name]
	s.mu.RUnlock()
	if !ok {
		return nil, status.Error(codes.NotFound, msgQueueNotFound)
	}
	return q, nil
}

// deleteQueue removes a queue and its tasks, and reserves its name.
func (s *Server) deleteQueue(name string) error {
	if _, _, err := parseQueueName(name); err != nil {
		return err
	}
	s.mu.Lock()
	q, ok := s.queues[name]
	if !ok {
		s.mu.Unlock()
		return status.Error(codes.NotFound, msgNotFound)
	}
	delete(s.queues, name)
	if s.opts.NameReservation > 0 {
		s.queueTombs[name] = time.Now().Add(s.opts.NameReservation).UnixNano()
	}
	s.mu.Unlock()
	q.cancel()
	q.mu.Lock()
	clear(q.tasks)
	q.waiting = nil
	q.mu.Unlock()
	return nil
}

// queuesUnder lists the queues of a parent in name order.
func (s *Server) queuesUnder(parent string) []*queue {
	prefix := parent + "/queues/"
	s.mu.RLock()
	var qs []*queue
	for name, q := range s.queues {
		if len(name) > len(prefix) && name[:len(prefix)] == prefix {
			qs = append(qs, q)
		}
	}
	s.mu.RUnlock()
	sort.Slice(qs, func(i, j int) bool { return qs[i].name < qs[j].name })
	return qs
}
