// Package fault is the one shape of a classified failure of a service wapipe calls (Vertex AI,
// a business's action endpoint): a Kind that says what the caller may do about it (its Class:
// retry, ask again, give up) and names it with a stable Code, the HTTP status and Retry-After the
// service answered, a Reason safe to log, and the cause. Callers test a kind with errors.Is and
// read the rest with errors.As (or ClassOf, CodeOf, RetryAfter), never from the error's text.
package fault
