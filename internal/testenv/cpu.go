package testenv

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user + system) the test process has used so far: the difference over
// a benchmark's run, divided by its operations, is the CPU per operation of everything the
// process runs (the services under test and, in-process, the fakes and the Cloud Tasks
// emulator; not the Firestore emulator, a process of its own).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
