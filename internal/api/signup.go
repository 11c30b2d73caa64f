package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/parked"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Embedded Signup routes (CONTRACT.md, Wave 2).
const (
	ConnectPath  = "/integrations/meta/whatsapp/connect"
	CallbackPath = "/integrations/meta/whatsapp/callback"
)

// ConnectLinkTTL is how long a connect link is valid.
const ConnectLinkTTL = time.Hour

// stateAD binds a sealed state to its purpose: no other ciphertext opens as one.
var stateAD = secrets.AD("-connect-state", "connect_state")

// connectState is what a connect link's state carries, sealed by the secrets keeper: integrity
// and secrecy from the same key the CLI and the service share (KMS_KEY_NAME, or the dev key).
type connectState struct {
	TenantID string `json:"t"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"`
}

// Sealer seals secrets; *secrets.Keeper implements it.
type Sealer interface {
	Encrypt(ctx context.Context, plaintext, ad []byte) ([]byte, error)
}

// NewConnectLink returns a link for tenantID's admin to run Embedded Signup, valid
// ConnectLinkTTL from now and usable once: publicBaseURL (PUBLIC_BASE_URL) + ConnectPath with a
// sealed state.
func NewConnectLink(ctx context.Context, sealer Sealer, publicBaseURL, tenantID string, now time.Time) (string, time.Time, error) {
	if publicBaseURL == "" {
		return "", time.Time{}, errors.New("no PUBLIC_BASE_URL: the link points at the api service")
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", time.Time{}, fmt.Errorf("connect link: crypto/rand: %w", err)
	}
	exp := now.Add(ConnectLinkTTL).Truncate(time.Second)
	plain, _ := json.Marshal(connectState{TenantID: tenantID, Nonce: hex.EncodeToString(nonce), Expires: exp.Unix()})
	sealed, err := sealer.Encrypt(ctx, plain, stateAD)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("seal the connect state: %w", err)
	}
	link := strings.TrimRight(publicBaseURL, "/") + ConnectPath + "?state=" + base64.RawURLEncoding.EncodeToString(sealed)
	return link, exp, nil
}

// errBadState is a state that does not open (forged, altered, for another deployment).
var errBadState = errors.New("this link is not valid")

// errExpiredState is a state past its hour.
var errExpiredState = errors.New("this link has expired")

// openState opens and checks a connect state.
func (s *Server) openState(ctx context.Context, raw string) (connectState, error) {
	var st connectState
	sealed, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || raw == "" || len(raw) > 4096 {
		return st, errBadState
	}
	plain, err := s.deps.Keeper.Decrypt(ctx, sealed, stateAD)
	if err != nil {
		if errors.Is(err, secrets.ErrNotAuthentic) || errors.Is(err, secrets.ErrMalformed) || errors.Is(err, secrets.ErrKeyKind) {
			return st, errBadState
		}
		return st, err
	}
	if json.Unmarshal(plain, &st) != nil || st.TenantID == "" || st.Nonce == "" {
		return st, errBadState
	}
	if !s.deps.Now().Before(time.Unix(st.Expires, 0)) {
		return st, errExpiredState
	}
	return st, nil
}

// handleConnect sends the tenant's admin to Meta's Embedded Signup dialog.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.cfg.SignupEnabled() {
		page(w, http.StatusNotFound, "Not available", "WhatsApp connection is not configured on this service.")
		return
	}
	raw := r.URL.Query().Get("state")
	st, err := s.openState(ctx, raw)
	if err != nil {
		s.statePage(w, r, err)
		return
	}
	q := url.Values{
		"client_id":                      {s.cfg.MetaAppID},
		"config_id":                      {s.cfg.MetaConfigID},
		"response_type":                  {"code"},
		"override_default_response_type": {"true"},
		"redirect_uri":                   {s.callbackURL()},
		"state":                          {raw},
		"extras":                         {`{"setup":{},"featureType":"","sessionInfoVersion":"3"}`},
	}
	logging.FromContext(ctx).InfoContext(ctx, "embedded signup started", "event", "signup_started", "tenant_id", st.TenantID)
	http.Redirect(w, r, s.cfg.FacebookDialogURL+"?"+q.Encode(), http.StatusFound)
}

func (s *Server) callbackURL() string {
	return strings.TrimRight(s.cfg.PublicBaseURL, "/") + CallbackPath
}

// handleCallback finishes Embedded Signup: the state is checked and used once, the code is
// exchanged at once for a token that debug_token must accept, the app is subscribed to the
// account's webhooks, its numbers are registered to the tenant, the token is stored sealed, and
// the tenant's parked sends are released. Any failure before the numbers are registered leaves
// the tenant unchanged.
func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	if !s.cfg.SignupEnabled() {
		page(w, http.StatusNotFound, "Not available", "WhatsApp connection is not configured on this service.")
		return
	}
	q := r.URL.Query()
	st, err := s.openState(ctx, q.Get("state"))
	if err != nil {
		s.statePage(w, r, err)
		return
	}
	ctx, logger = logging.With(ctx, "tenant_id", st.TenantID)
	if q.Get("code") == "" {
		logger.InfoContext(ctx, "embedded signup cancelled or refused at Meta", "event", "signup_cancelled")
		page(w, http.StatusBadRequest, "Not connected", "Meta did not complete the connection (cancelled or refused). Nothing was changed; ask for a new link to try again.")
		return
	}
	if _, err := s.deps.Tenants.Get(ctx, st.TenantID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			page(w, http.StatusBadRequest, "Not connected", "This link is for a business that no longer exists. Nothing was changed.")
			return
		}
		s.failPage(w, r, "read the tenant", err)
		return
	}
	if err := s.deps.Tenants.UseConnectState(ctx, st.Nonce, st.TenantID, time.Unix(st.Expires, 0).Add(24*time.Hour)); err != nil {
		if errors.Is(err, store.ErrStateUsed) {
			logger.WarnContext(ctx, "embedded signup refused: the link was used already", "event", "signup_refused", "reason", "state_reused")
			page(w, http.StatusBadRequest, "Link already used", "This connection link was used already. Nothing was changed; ask for a new link.")
			return
		}
		s.failPage(w, r, "record the link's use", err)
		return
	}
	res, err := s.connect(ctx, st.TenantID, q.Get("code"))
	if err != nil {
		logger.ErrorContext(ctx, "embedded signup failed", "event", "signup_failed", "error", err)
		page(w, http.StatusBadGateway, "Not connected", "The connection with Meta failed: "+userReason(err)+". Nothing was changed; ask for a new link to try again.")
		return
	}
	logger.InfoContext(ctx, "embedded signup completed", "event", "signup_completed", "numbers", len(res.numbers),
		"added", len(res.added), "accounts", len(res.wabas), "released", res.released)
	msg := fmt.Sprintf("WhatsApp is connected: %d number(s) registered (%s), webhooks subscribed for %d account(s).",
		len(res.numbers), strings.Join(res.numbers, ", "), len(res.wabas))
	if res.released > 0 {
		msg += fmt.Sprintf(" %d waiting message(s) are being sent now.", res.released)
	}
	if res.releaseErr != nil {
		msg += " Some waiting messages could not be released yet; an operator will finish it."
	}
	page(w, http.StatusOK, "Connected", msg)
}

type connectResult struct {
	wabas, numbers, added []string
	released              int
	releaseErr            error
}

// connectError is a failure to show the admin in plain words.
type connectError struct {
	reason string
	err    error
}

func (e *connectError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

func userReason(err error) string {
	var ce *connectError
	if errors.As(err, &ce) {
		return ce.reason
	}
	return "an internal error"
}

// connect runs the Graph side of the callback and registers the result.
func (s *Server) connect(ctx context.Context, tenantID, code string) (connectResult, error) {
	var res connectResult
	token, err := s.deps.Graph.ExchangeCode(ctx, s.cfg.MetaAppID, s.cfg.AppSecret, s.callbackURL(), code)
	if err != nil {
		return res, &connectError{"Meta refused the authorization code", err}
	}
	gc := s.deps.Graph.WithToken(token)
	info, err := gc.DebugToken(ctx, token)
	switch {
	case err != nil:
		return res, &connectError{"the new token could not be checked", err}
	case !info.Valid:
		return res, &connectError{"Meta says the new token is not valid", errors.New("debug_token: is_valid false")}
	case !info.HasScope(graph.ScopeMessaging):
		return res, &connectError{"the new token may not send WhatsApp messages", errors.New("debug_token: no " + graph.ScopeMessaging)}
	}
	seen := map[string]bool{}
	for _, g := range info.GranularScopes {
		if g.Scope != "whatsapp_business_management" && g.Scope != graph.ScopeMessaging {
			continue
		}
		for _, id := range g.TargetIDs {
			if !seen[id] {
				seen[id] = true
				res.wabas = append(res.wabas, id)
			}
		}
	}
	if len(res.wabas) == 0 {
		return res, &connectError{"no WhatsApp Business Account was shared", errors.New("debug_token: no target ids")}
	}
	var nums []tenant.PhoneNumber
	for _, waba := range res.wabas {
		if err := gc.SubscribeApp(ctx, waba); err != nil {
			return res, &connectError{"the app could not subscribe to the account's webhooks", err}
		}
		pns, err := gc.PhoneNumbers(ctx, waba)
		if err != nil {
			return res, &connectError{"the account's phone numbers could not be read", err}
		}
		for _, p := range pns {
			nums = append(nums, tenant.PhoneNumber{PhoneNumberID: p.ID, WABAID: waba})
			res.numbers = append(res.numbers, p.ID)
		}
	}
	if len(nums) == 0 {
		return res, &connectError{"the account has no phone number", errors.New("phone_numbers: empty")}
	}
	res.added, err = s.deps.Tenants.AddPhoneNumbers(ctx, tenantID, nums)
	var ps tenant.Problems
	if errors.As(err, &ps) {
		return res, &connectError{"a number of this account belongs to another business", err}
	}
	if err != nil {
		return res, err
	}
	sealed, err := s.deps.Keeper.Encrypt(ctx, []byte(token), secrets.AD(tenantID, secrets.PurposeAccessToken))
	if err != nil {
		return res, fmt.Errorf("seal the token: %w", err)
	}
	if _, err := s.deps.Tenants.SetAccessToken(ctx, tenantID, sealed); err != nil {
		return res, fmt.Errorf("store the token: %w", err)
	}
	res.released, res.releaseErr = parked.Release(ctx, s.deps.Sends, s.deps.Tasks, tenantID, correlationID(ctx))
	if res.releaseErr != nil {
		logging.FromContext(ctx).ErrorContext(ctx, "parked sends not all released: run wapipe tenants set-token or connect again",
			"event", "release_failed", "error", res.releaseErr)
	}
	return res, nil
}

// statePage answers a state that does not open, expired, or could not be checked.
func (s *Server) statePage(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	switch {
	case errors.Is(err, errBadState):
		logging.FromContext(ctx).WarnContext(ctx, "embedded signup refused: invalid state", "event", "signup_refused", "reason", "state_invalid")
		page(w, http.StatusBadRequest, "Invalid link", "This connection link is not valid. Nothing was changed; ask for a new link.")
	case errors.Is(err, errExpiredState):
		logging.FromContext(ctx).InfoContext(ctx, "embedded signup refused: expired state", "event", "signup_refused", "reason", "state_expired")
		page(w, http.StatusBadRequest, "Link expired", "This connection link has expired (links are valid one hour). Nothing was changed; ask for a new link.")
	default:
		s.failPage(w, r, "open the link", err)
	}
}

func (s *Server) failPage(w http.ResponseWriter, r *http.Request, what string, err error) {
	logging.FromContext(r.Context()).ErrorContext(r.Context(), "embedded signup: could not "+what, "event", "signup_unavailable", "error", err)
	page(w, http.StatusServiceUnavailable, "Try again", "The service could not complete this step. Nothing was changed; try the link again in a minute.")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{.Title}}</title></head>
<body style="font-family:sans-serif;max-width:36em;margin:3em auto"><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

// page answers a plain HTML page.
func page(w http.ResponseWriter, status int, title, message string) {
	var b strings.Builder
	_ = pageTemplate.Execute(&b, struct{ Title, Message string }{title, message})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
