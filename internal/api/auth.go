package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/ratelimit"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
)

// callerKey is the context key of the tenant withCaller authenticated.
type callerKey struct{}

// withCaller authenticates a /v1 request's API key and applies the rate limits before the
// handler runs. The address limit (API_RATE_PER_ADDRESS) counts only requests without a valid
// key, so that a business's burst of sends is held to its key's limit alone and paced afterwards
// by its send queue; guessing keys stays limited per address, and cheap:
//   - a request without a key of apikey's form costs no lookup: it is charged to its client
//     address and answered 401, or 429 once the address is over its limit;
//   - a well-formed key is looked up (one document read by id), unless its address is already
//     over its limit (429 at once, without the read: a flood of guessed keys costs at most the
//     address's limit in reads, plus the requests in flight when it ran out); a key that fails
//     is charged to its address and answered 401;
//   - a valid key is never charged to its address: it is held to its own limit, its tenant's
//     limits.api, else API_RATE_PER_KEY and API_BURST_PER_KEY.
func (s *Server) withCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := ratelimit.ClientAddr(r, !s.cfg.IsDev())
		key, id, ok := bearerKey(r)
		if !ok {
			if !s.refusedAt(w, r, s.byAddress.Allow(addr), "address") {
				fail(w, r, errUnauthenticated)
			}
			return
		}
		if s.refusedAt(w, r, s.byAddress.Check(addr), "address") {
			return
		}
		tenantID, err := s.authenticate(r.Context(), key, id)
		if errors.Is(err, errUnauthenticated) {
			s.byAddress.Allow(addr)
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		ctx, _ := logging.With(r.Context(), "tenant_id", tenantID)
		r = r.WithContext(context.WithValue(ctx, callerKey{}, tenantID))
		if s.refusedAt(w, r, s.byKey.AllowLimit(id, s.keyLimitOf(ctx, tenantID)), "key") {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// caller is the tenant of a /v1 request, authenticated by withCaller, with r's context naming
// the tenant in its log lines; ok is false, the request answered, on a route withCaller does
// not guard (a mistake in Routes).
func (s *Server) caller(w http.ResponseWriter, r *http.Request) (_ *http.Request, tenantID string, ok bool) {
	tenantID, ok = r.Context().Value(callerKey{}).(string)
	if !ok {
		fail(w, r, errors.New("api: route served without withCaller: no authenticated tenant"))
	}
	return r, tenantID, ok
}

// keyLimitOf is the limit of each of tenantID's keys: its file's limits.api, the configuration's
// for what the file leaves out. The tenant comes from the per-instance cache (a few seconds old
// at most, so an apply takes that long to reach every instance); when it cannot be read the
// configuration's limit applies, as the limit must not fail a request the store may still serve.
func (s *Server) keyLimitOf(ctx context.Context, tenantID string) ratelimit.Limit {
	if s.deps.Settings == nil {
		return s.keyLimit
	}
	rec, err := s.deps.Settings.Tenant(ctx, tenantID)
	if err != nil || rec.Tenant == nil {
		return s.keyLimit
	}
	rate, burst := rec.Tenant.Limits.API.Or(s.keyLimit.Rate, s.keyLimit.Burst)
	return ratelimit.Limit{Rate: rate, Burst: burst}
}

// withAddressLimit answers 429 to a client address over API_RATE_PER_ADDRESS, for the routes that
// take no API key (the signup pages). Behind Google's front end (outside dev) the address is the
// last X-Forwarded-For entry; in dev, the connection's.
func (s *Server) withAddressLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.refusedAt(w, r, s.byAddress.Allow(ratelimit.ClientAddr(r, !s.cfg.IsDev())), "address") {
			next.ServeHTTP(w, r)
		}
	})
}

// refusedAt answers d's refusal, if it is one, with 429 rate_limited and Retry-After in whole
// seconds, and reports whether it did. One line is logged per episode (the first refusal since
// the caller was last served), not one per refused request; scope says which limit (address or
// key), never the address.
func (s *Server) refusedAt(w http.ResponseWriter, r *http.Request, d ratelimit.Decision, scope string) bool {
	if d.OK {
		return false
	}
	if d.First {
		logging.FromContext(r.Context()).WarnContext(r.Context(), "request refused: rate limit", "event", "api_rate_limited",
			"scope", scope, "retry_after_ms", d.RetryAfter.Milliseconds())
	}
	secs := d.RetryAfterSeconds()
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	fail(w, r, refusal.New(refusal.RateLimited, fmt.Sprintf("too many requests, retry in %d s", secs)))
	return true
}

// bearerKey returns the request's API key (Authorization: Bearer wpk_…) and its id, and false
// when there is none of apikey's form: such a request needs no lookup to be refused.
func bearerKey(r *http.Request) (key, id string, ok bool) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", "", false
	}
	key = strings.TrimSpace(raw)
	id, ok = apikey.ID(key)
	return key, id, ok
}

// authenticate returns the tenant of key, whose id is id: the id finds its record, and its hash,
// compared in constant time, proves it. The record is read on every request, never cached, so a
// revocation refuses the very next request on every instance (one document read by id, a few
// milliseconds). errUnauthenticated when the key does not prove itself.
func (s *Server) authenticate(ctx context.Context, key, id string) (string, error) {
	rec, err := s.deps.Keys.GetAPIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", errUnauthenticated
	}
	if err != nil {
		return "", err
	}
	if !apikey.Match(key, rec.Hash) || !rec.Usable(s.deps.Now()) {
		return "", errUnauthenticated
	}
	if err := s.deps.Keys.TouchAPIKey(ctx, rec); err != nil {
		// last_used_at informs operators; it never decides a request.
		logging.FromContext(ctx).WarnContext(ctx, "api key use not recorded", "event", "api_key_touch_failed", "error", err)
	}
	return rec.TenantID, nil
}
