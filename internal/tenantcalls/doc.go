// Package tenantcalls serves the worker's tenant routes (/internal/tenants/{tenant_id}/…): the
// Graph calls the api and the console need answered at once and that take a tenant's access
// token (media uploads, the templates, the console's copy of a message's file). Only the
// worker's service account can open a tenant's token, so the public api and the console ask the
// worker, through package workerclient, instead of holding tokens themselves.
//
// The worker mounts these routes under tenantroutes.Prefix behind its own admission (who may
// call each route is tasks.Routes); this package knows nothing of the worker. The routes are
// called directly with the caller's ID token, never through Cloud Tasks, and answer their
// refusals as the api does ({"error":{"code","message"}}, package tenantroutes, their contract),
// so a caller can pass a refusal on as it is.
package tenantcalls
