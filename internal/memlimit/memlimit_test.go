package memlimit_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/wapipe/wapipe/internal/memlimit"
)

func TestContainerLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   map[string]string
		want    int64
		wantErr error
	}{
		{"cgroup v2", map[string]string{"sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20, nil},
		{"cgroup v2 unlimited", map[string]string{"sys/fs/cgroup/memory.max": "max\n"}, 0, memlimit.ErrNoLimit},
		{"cgroup v1", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, nil},
		{"cgroup v1 unlimited", map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, memlimit.ErrNoLimit},
		{"no cgroup", map[string]string{}, 0, memlimit.ErrNoLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := fstest.MapFS{}
			for name, data := range tc.files {
				root[name] = &fstest.MapFile{Data: []byte(data)}
			}
			got, err := memlimit.ContainerLimit(root)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("ContainerLimit = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if _, err := memlimit.ContainerLimit(fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("lots")}}); err == nil || errors.Is(err, memlimit.ErrNoLimit) {
		t.Errorf("an unreadable limit: %v, want a parse error", err)
	}
}
