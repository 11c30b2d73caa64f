// Package memlimit sets the Go runtime's soft memory limit from the container's memory limit, so
// the garbage collector works harder as a service nears it instead of the container being killed.
package memlimit
