package llm_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/llm/geminifake"
)

func TestNewLazyNeedsAProject(t *testing.T) {
	t.Parallel()
	if _, err := llm.NewLazy(llm.Config{}, nil); err == nil {
		t.Fatal("NewLazy with no project: no error")
	}
}

// TestLazyBuildsOnFirstUse: the client is built on the first Extract, once, even when the
// first turns come at the same time, and answers like a Client.
func TestLazyBuildsOnFirstUse(t *testing.T) {
	t.Parallel()
	fake := geminifake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	var buildErrors int
	lazy, err := llm.NewLazy(llm.Config{Project: "wapipe-dev", BaseURL: srv.URL}, func(error) { buildErrors++ })
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("NewLazy made %d calls, want none", n)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = lazy.Extract(context.Background(), request("halo"))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Extract %d: %v", i, err)
		}
	}
	if n := len(fake.Requests()); n != len(errs) {
		t.Errorf("the fake answered %d calls, want %d", n, len(errs))
	}
	if buildErrors != 0 {
		t.Errorf("%d build errors reported, want 0", buildErrors)
	}
}

// TestLazyWithoutCredentials: with no Application Default Credentials the Lazy is still
// created (a worker with no llm tenant starts), each Extract answers ErrUnavailable (the turn
// is retried, as in an outage) and reports the failure, and nothing is cached: the next
// Extract tries again.
func TestLazyWithoutCredentials(t *testing.T) {
	// A credentials file that does not exist: the lookup fails at once, on any machine.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	var reported []error
	lazy, err := llm.NewLazy(llm.Config{Project: "wapipe-prod"}, func(err error) { reported = append(reported, err) })
	if err != nil {
		t.Fatalf("NewLazy without credentials: %v", err)
	}
	for i := range 2 {
		_, err := lazy.Extract(context.Background(), request("halo"))
		if !errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("Extract %d = %v, want ErrUnavailable", i, err)
		}
		var e *llm.Error
		if !errors.As(err, &e) || e.Reason == "" {
			t.Errorf("Extract %d: error %v is not an *llm.Error with a reason", i, err)
		}
	}
	if len(reported) != 2 {
		t.Errorf("onBuildError called %d times, want 2 (each failed build)", len(reported))
	}
}
