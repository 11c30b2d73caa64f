package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Ratio is the share of the container's memory given to the Go runtime; the rest is left to
// stacks, the runtime's own overhead and anything outside the Go heap.
const Ratio = 0.9

// cgroupFiles hold the container's memory limit: cgroup v2 (Cloud Run's second generation, most
// container runtimes) first, then v1.
var cgroupFiles = []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noLimit is above any real limit: cgroup v1 reports "no limit" as a number near 2^63.
const noLimit = 1 << 62

// ErrNoLimit is returned when the container has no memory limit to read.
var ErrNoLimit = errors.New("no container memory limit")

// Set sets the runtime's memory limit to Ratio of the container's, unless GOMEMLIMIT is set (the
// operator's choice wins). It returns the limit set, 0 when it left the runtime's as it was.
func Set() (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := ContainerLimit(os.DirFS("/"))
	if err != nil {
		return 0, err
	}
	n := int64(float64(limit) * Ratio)
	debug.SetMemoryLimit(n)
	return n, nil
}

// ContainerLimit reads the container's memory limit in bytes from the cgroup files under root;
// ErrNoLimit when there is none.
func ContainerLimit(root fs.FS) (int64, error) {
	for _, name := range cgroupFiles {
		b, err := fs.ReadFile(root, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", name, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, ErrNoLimit
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %s: %w", name, err)
		}
		if n <= 0 || n >= noLimit {
			return 0, ErrNoLimit
		}
		return n, nil
	}
	return 0, ErrNoLimit
}

// Apply is Set for a service's main: it logs what it did, and a container without a limit (a
// laptop) is no error.
func Apply(logger *slog.Logger) {
	n, err := Set()
	switch {
	case errors.Is(err, ErrNoLimit):
		logger.Debug("no container memory limit: Go memory limit left as is", "event", "memory_limit_unset")
	case err != nil:
		logger.Warn("container memory limit not read: Go memory limit left as is", "event", "memory_limit_unset", "error", err)
	case n > 0:
		logger.Info("Go memory limit set from the container's", "event", "memory_limit_set", "bytes", n)
	}
}
