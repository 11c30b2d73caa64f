package store

// WithTxHooks returns opts with hooks that run around each transaction attempt: before at the
// start of attempt n, after once its work is done (an Aborted error makes Firestore retry).
func WithTxHooks(opts Options, before func(n int), after func(n int) error) Options {
	opts.txHooks = &txHooks{before: before, after: after}
	return opts
}
