// Package ratelimit limits how often one caller (a client address, an API key) may be served:
// a token bucket per key, in memory, with idle buckets dropped so that the memory a flood of
// distinct keys can take stays bounded. Each instance of a service limits on its own.
package ratelimit
