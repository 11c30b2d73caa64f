package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// traceUnrouted is the trace status of a message no one serves: no tenant owns its number and
// the worker has no default token.
const traceUnrouted = "unrouted"

// route is where the messages to one business number go.
type route struct {
	// tenantID owns the number; "" is the single-tenant default.
	tenantID string
	// queue takes the outbound tasks: the tenant's own, or OUTBOUND_TASK_QUEUE_NAME.
	queue string
	// unrouted: no tenant owns the number and there is no default: nothing is sent.
	unrouted bool
}

// routeAll resolves each distinct business number of a delivery (usually one). A lookup that
// fails fails the delivery, so Cloud Tasks retries it: guessing a route would send with the
// wrong token or drop a tenant's message.
func (s *Server) routeAll(ctx context.Context, logger *slog.Logger, msgs []whatsapp.Message, statuses []whatsapp.Status) (map[string]route, error) {
	routes := map[string]route{}
	resolve := func(phoneNumberID string) error {
		if _, ok := routes[phoneNumberID]; ok {
			return nil
		}
		r, err := s.route(ctx, phoneNumberID)
		if err != nil {
			return err
		}
		if r.unrouted {
			// phone_number_id is the business's number id, not a person's: fine to log.
			logger.ErrorContext(ctx, "no tenant owns this business number and WHATSAPP_ACCESS_TOKEN is unset: not answering",
				"event", "unrouted_number", "phone_number_id", phoneNumberID)
		}
		routes[phoneNumberID] = r
		return nil
	}
	for _, m := range msgs {
		if err := resolve(m.PhoneNumberID); err != nil {
			return nil, err
		}
	}
	for _, st := range statuses {
		if err := resolve(st.PhoneNumberID); err != nil {
			return nil, err
		}
	}
	return routes, nil
}

// route resolves one business number to its tenant.
func (s *Server) route(ctx context.Context, phoneNumberID string) (route, error) {
	rec, err := s.deps.Tenants.ByPhoneNumber(ctx, phoneNumberID)
	switch {
	case err == nil:
		return route{tenantID: rec.Tenant.ID, queue: tasks.TenantQueueID(rec.Tenant.ID)}, nil
	case errors.Is(err, store.ErrNotFound):
		if s.cfg.AccessToken != "" {
			return route{queue: s.cfg.OutboundQueue}, nil
		}
		return route{unrouted: true}, nil
	default:
		return route{}, fmt.Errorf("resolve the tenant of business number %s: %w", phoneNumberID, err)
	}
}
