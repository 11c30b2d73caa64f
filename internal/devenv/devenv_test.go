package devenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFill: the running devstack's file fills the environment's gaps; explicit settings win and
// a stale or missing file is ignored.
func TestFill(t *testing.T) {
	stackEnv := map[string]string{"GOOGLE_CLOUD_PROJECT": "wapipe-dev", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9999", "APP_ENV": "dev"}
	cases := []struct {
		name     string
		pid      int // 0: no file
		env      map[string]string
		wantUsed bool
		want     map[string]string
	}{
		{"fills what is missing", os.Getpid(), map[string]string{"APP_ENV": "staging"}, true,
			map[string]string{"GOOGLE_CLOUD_PROJECT": "wapipe-dev", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:9999", "APP_ENV": "staging"}},
		{"explicit project wins", os.Getpid(), map[string]string{"GOOGLE_CLOUD_PROJECT": "prod-project"}, false,
			map[string]string{"GOOGLE_CLOUD_PROJECT": "prod-project"}},
		{"explicit emulator wins", os.Getpid(), map[string]string{"CLOUD_TASKS_EMULATOR_HOST": "127.0.0.1:1"}, false,
			map[string]string{"CLOUD_TASKS_EMULATOR_HOST": "127.0.0.1:1"}},
		{"stale file", 1 << 30, map[string]string{}, false, map[string]string{}},
		{"no file", 0, map[string]string{}, false, map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XDG_RUNTIME_DIR", dir)
			path := filepath.Join(dir, "wapipe", "devstack.env")
			if tc.pid != 0 {
				if err := Write(path, File{PID: tc.pid, Env: stackEnv}); err != nil {
					t.Fatal(err)
				}
				fi, err := os.Stat(path)
				if err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("written file: %v, want mode 0600", err)
				}
			}
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = v
			}
			used, err := Fill(func(k string) string { return env[k] },
				func(k, v string) error { env[k] = v; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if (used == path) != tc.wantUsed || (!tc.wantUsed && used != "") {
				t.Errorf("used %q, want used=%v (%s)", used, tc.wantUsed, path)
			}
			if len(env) != len(tc.want) {
				t.Errorf("environment %v, want %v", env, tc.want)
			}
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

// TestRemoveKeepsAnotherStacksFile: a stopping devstack removes only its own file.
func TestRemoveKeepsAnotherStacksFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "devstack.env")
	if err := Write(path, File{PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path, os.Getpid()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("another devstack's file was removed: %v", err)
	}
	if err := Remove(path, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("own file still there: %v", err)
	}
}
