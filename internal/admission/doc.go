// Package admission is the worker's door: the middleware in front of every /internal route that
// lets a request through only when its caller may call that route, as its row of tasks.Routes and
// ROUTE_CALLERS say (the internal token, the verified OIDC identity, a task's queue). The worker
// mounts it (internal/worker); it knows nothing of what the routes do.
package admission
