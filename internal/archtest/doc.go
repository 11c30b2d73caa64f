// Package archtest holds tests of the code's shape that no single package can check: which
// packages may import which client libraries.
package archtest
