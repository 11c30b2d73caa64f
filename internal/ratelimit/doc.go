// Package ratelimit limits how often one caller (a client address, an API key) may be served:
// a token bucket per key, in memory, with idle buckets dropped so that the memory a flood of
// distinct keys can take stays bounded. A key may be held to a limit of its own (AllowLimit: a
// tenant's API keys), and a caller may check a key without charging it (Check). Each instance of
// a service limits on its own.
package ratelimit
