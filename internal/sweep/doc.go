// Package sweep is the home of wapipe's periodic checks: the worker's POST /internal/sweep,
// which Cloud Scheduler calls every minute (devstack's ticker locally), runs each Job of a
// Sweeper once, within a bounded time, and answers and logs what each found and did.
//
// A job is whatever must happen whether or not a task or a request asks for it: conversations
// whose holder died with messages still in their inbox are run again (StrandedInboxes), the
// health report is computed so a stalled queue is logged for its alert (HealthProbe). A new
// periodic check is one more Job in the worker's list (internal/worker/sweep.go): every job runs
// on every sweep, a failing or slow one never keeps the others from running, and any failure
// makes the sweep answer 500 so that Cloud Scheduler tries again. Jobs must therefore be safe to
// run twice in the same minute.
package sweep
