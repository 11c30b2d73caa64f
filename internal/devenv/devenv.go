// Package devenv is the file through which a running devstack tells the wapipe CLI where it is:
// cmd/devstack writes its environment (emulator hosts, project, dev secrets) there while it runs
// and removes it on exit, and the CLI reads it when its own environment names no stack, so that
// `wapipe tenants list` works beside a devstack without copying export lines.
package devenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// File is what the file holds.
type File struct {
	// PID is the devstack's process; a file whose process is gone is stale and ignored.
	PID int `json:"pid"`
	// Env are the variables the CLI would otherwise need exported.
	Env map[string]string `json:"env"`
}

// ConnVars are the variables that say which stack the CLI talks to: when any of them is set the
// caller chose a stack itself and the file is not read.
var ConnVars = []string{"GOOGLE_CLOUD_PROJECT", "FIRESTORE_EMULATOR_HOST", "CLOUD_TASKS_EMULATOR_HOST"}

// Path is where the file lives: $XDG_RUNTIME_DIR/wapipe/devstack.env (a per-user directory that
// disappears at logout, the right lifetime for a running process's address), else
// os.UserCacheDir()/wapipe/devstack.env.
func Path() (string, error) {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			return "", fmt.Errorf("find the devstack environment file: %w", err)
		}
	}
	return filepath.Join(dir, "wapipe", "devstack.env"), nil
}

// Write writes f to path whole or not at all (a temporary file renamed over it), readable by its
// owner only: it carries the dev secrets, and the CLI trusts what it finds there.
func Write(path string, f File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the devstack environment: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the devstack environment's directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".devstack.env-*")
	if err != nil {
		return fmt.Errorf("write the devstack environment: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write the devstack environment: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the devstack environment: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write the devstack environment: %w", err)
	}
	return nil
}

// Remove deletes the file at path if it is still pid's: a second devstack may have written its
// own since, and that one must stay.
func Remove(path string, pid int) error {
	f, err := read(path)
	if err != nil || f.PID != pid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the devstack environment: %w", err)
	}
	return nil
}

// ErrStale says the file names a devstack that is no longer running.
var ErrStale = errors.New("the devstack that wrote it is no longer running")

// Read returns the file at path. It returns an error wrapping fs.ErrNotExist when there is none,
// and ErrStale when its devstack is gone.
func Read(path string) (File, error) {
	f, err := read(path)
	if err != nil {
		return File{}, err
	}
	if !alive(f.PID) {
		return File{}, fmt.Errorf("%s: %w (pid %d)", path, ErrStale, f.PID)
	}
	return f, nil
}

func read(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("read the devstack environment: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return File{}, fmt.Errorf("decode the devstack environment %s: %w", path, err)
	}
	return f, nil
}

// alive reports whether a process pid exists (signal 0 checks without sending anything; EPERM
// means it exists but belongs to someone else).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Fill sets, from the running devstack's file, each variable of the file that the environment
// lacks, unless the environment already names a stack (one of ConnVars is set): explicit settings
// always win. It returns the file it used, or "" when it used none.
func Fill(getenv func(string) string, setenv func(string, string) error) (string, error) {
	for _, k := range ConnVars {
		if getenv(k) != "" {
			return "", nil
		}
	}
	path, err := Path()
	if err != nil {
		return "", nil // no place to look: nothing to use
	}
	f, err := Read(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrStale) {
			return "", nil
		}
		return "", err
	}
	for k, v := range f.Env {
		if getenv(k) != "" {
			continue
		}
		if err := setenv(k, v); err != nil {
			return "", fmt.Errorf("set %s from %s: %w", k, path, err)
		}
	}
	return path, nil
}
