package fault

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Class is what a caller may do about a failure.
type Class int

// The classes. The zero Class is an error that is not classified (not an *Error).
const (
	// Retryable: the call may succeed later (timeout, network error, HTTP 5xx, 429); retry no
	// sooner than RetryAfter when it is set.
	Retryable Class = iota + 1
	// Invalid: the service answered, but not usably (not the JSON asked for); asking again may
	// give a usable answer.
	Invalid
	// Permanent: the call cannot succeed as it is (a 4xx, a bad URL, a request that fails local
	// validation); do not retry.
	Permanent
)

var classNames = map[Class]string{Retryable: "retryable", Invalid: "invalid", Permanent: "permanent"}

func (c Class) String() string {
	if n, ok := classNames[c]; ok {
		return n
	}
	return "unclassified"
}

// Kind is one kind of failure of one service: a sentinel error (errors.Is(err, llm.ErrUnavailable))
// with its Class and a stable Code for logs and tables.
type Kind struct {
	class Class
	code  string
	text  string
}

// NewKind returns a kind of the class, named code in tables and text in error messages.
func NewKind(class Class, code, text string) *Kind {
	return &Kind{class: class, code: code, text: text}
}

func (k *Kind) Error() string { return k.text }

// Class returns what a caller may do about a failure of this kind.
func (k *Kind) Class() Class { return k.class }

// Code returns the kind's stable name ("llm_unavailable").
func (k *Kind) Code() string { return k.code }

// Error is a classified failure.
type Error struct {
	// Kind is the failure's kind, a *Kind of the package that failed.
	Kind error
	// HTTPStatus is the status the service answered, 0 when no answer arrived (timeout, network
	// error) or the answer was a 2xx.
	HTTPStatus int
	// RetryAfter is how long the service asked us to wait; 0 when it did not say.
	RetryAfter time.Duration
	// Reason says what failed without quoting a message, a secret, a body or a URL's query.
	Reason string
	// Err is the cause, for errors.Is and errors.As. Its text may quote a body or a URL, so
	// Error() leaves it out.
	Err error
}

// Error describes the failure for logs: the kind, the status, the reason, the wait.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Class returns the class of e's kind; Retryable when the kind carries none, since dropping a
// transient failure loses work while retrying a permanent one costs a few attempts.
func (e *Error) Class() Class {
	var k *Kind
	if errors.As(e.Kind, &k) {
		return k.class
	}
	return Retryable
}

// Code returns the code of e's kind, "" when it has none.
func (e *Error) Code() string {
	var k *Kind
	if errors.As(e.Kind, &k) {
		return k.code
	}
	return ""
}

// ClassOf returns the class of the *Error in err's chain, or 0 when there is none.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class()
	}
	return 0
}

// CodeOf returns the code of the *Error in err's chain, or "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return ""
}

// RetryAfter returns the wait the service asked for, when err carries one.
func RetryAfter(err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter, true
	}
	return 0, false
}
