// Package archtest holds tests of the code's shape that no single package can check: which
// packages may import which client libraries, which may move an outbound record's send state
// (only the store and package delivery), and how long a function of internal/ may be.
package archtest
