package signup

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/randid"
	"github.com/wapipe/wapipe/internal/secrets"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/tenant"
)

// Embedded Signup routes (CONTRACT.md, Wave 2 and 3). GET ConnectPath shows the connect page;
// its button POSTs to ConnectPath, which sends the browser to Meta's dialog; Meta sends it back
// to CallbackPath.
const (
	ConnectPath  = "/integrations/meta/whatsapp/connect"
	CallbackPath = "/integrations/meta/whatsapp/callback"
)

// ConnectLinkTTL is how long a connect link is valid.
const ConnectLinkTTL = time.Hour

// OAuthStateTTL is how long the state given to Meta's dialog is valid: long enough to log in and
// pick the accounts, short because it travels in URLs.
const OAuthStateTTL = 10 * time.Minute

// connectCookie binds one browser to its connect page, its button and its callback: the page sets
// it, the button's form repeats it (double submit), and the dialog's state carries its hash.
const connectCookie = "wapipe_connect"

// Sealed states are bound to their purpose: a link's state does not open as the dialog's, nor
// any other ciphertext as either.
var (
	stateAD      = secrets.AD("-connect-state", "connect_state")
	oauthStateAD = secrets.AD("-connect-state", "oauth_state")
)

// connectState is what a connect link's state, and the dialog's, carry, sealed by the secrets
// keeper: integrity and secrecy from the same key the CLI and the service share (KMS_KEY_NAME,
// or the dev key).
type connectState struct {
	TenantID string `json:"t"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"`
	// Browser is the hex SHA-256 of the connect cookie of the browser that pressed the button
	// (the dialog's state only).
	Browser string `json:"b,omitempty"`
}

// Sealer seals secrets; *secrets.Keeper implements it.
type Sealer interface {
	Encrypt(ctx context.Context, plaintext, ad []byte) ([]byte, error)
}

// NewConnectLink returns a link for tenantID's admin to run Embedded Signup, valid
// ConnectLinkTTL from now and usable once: publicBaseURL (PUBLIC_BASE_URL) + ConnectPath with a
// sealed state tagged with keyer (LOG_HASH_KEY's; the dev key's when nil).
func NewConnectLink(ctx context.Context, sealer Sealer, keyer *keyedid.Keyer, publicBaseURL, tenantID string, now time.Time) (string, time.Time, error) {
	if publicBaseURL == "" {
		return "", time.Time{}, errors.New("no PUBLIC_BASE_URL: the link points at the api service")
	}
	exp := now.Add(ConnectLinkTTL).Truncate(time.Second)
	raw, err := sealState(ctx, sealer, keyer, connectState{TenantID: tenantID, Expires: exp.Unix()}, stateAD)
	if err != nil {
		return "", time.Time{}, err
	}
	return strings.TrimRight(publicBaseURL, "/") + ConnectPath + "?state=" + raw, exp, nil
}

// A state is its sealed bytes, base64url, then "." and a tag: the keyed id of those bytes and
// their purpose under LOG_HASH_KEY's key, which every service and the CLI hold. The tag is
// checked first, so a forged or altered state costs one HMAC, never a Cloud KMS call (opening
// a sealed state unwraps its key with KMS); the seal still gives the state its secrecy and binds
// it to its purpose.
const tagKind = "connect-state-tag"

// stateTag is the tag of a state's encoded sealed bytes for ad.
func stateTag(k *keyedid.Keyer, body string, ad []byte) string {
	return k.ID(tagKind, string(ad), body)
}

// sealState gives st a fresh nonce, seals it for ad and tags it with keyer.
func sealState(ctx context.Context, sealer Sealer, keyer *keyedid.Keyer, st connectState, ad []byte) (string, error) {
	if keyer == nil {
		keyer = keyedid.Dev()
	}
	st.Nonce = randid.Hex(16)
	plain, _ := json.Marshal(st)
	sealed, err := sealer.Encrypt(ctx, plain, ad)
	if err != nil {
		return "", fmt.Errorf("seal the connect state: %w", err)
	}
	body := base64.RawURLEncoding.EncodeToString(sealed)
	return body + "." + stateTag(keyer, body, ad), nil
}

// errBadState is a state that does not open (forged, altered, for another deployment).
var errBadState = errors.New("this link is not valid")

// errExpiredState is a state past its validity.
var errExpiredState = errors.New("this link has expired")

// tagged reports whether tag is body's for ad under the key in use or, during a rotation of
// LOG_HASH_KEY, the previous one (a link outlives no more than ConnectLinkTTL).
func (s *Server) tagged(body, tag string, ad []byte) bool {
	for k := s.keyer(); k != nil; k = k.Previous() {
		if subtle.ConstantTimeCompare([]byte(stateTag(k, body, ad)), []byte(tag)) == 1 {
			return true
		}
	}
	return false
}

func (s *Server) keyer() *keyedid.Keyer {
	if s.deps.Keyer == nil {
		return keyedid.Dev()
	}
	return s.deps.Keyer
}

// openState checks a state's tag, then opens and checks the state sealed for ad.
func (s *Server) openState(ctx context.Context, raw string, ad []byte) (connectState, error) {
	var st connectState
	body, tag, ok := strings.Cut(raw, ".")
	if !ok || body == "" || len(raw) > 4096 || !s.tagged(body, tag, ad) {
		return st, errBadState
	}
	sealed, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return st, errBadState
	}
	plain, err := s.deps.Keeper.Decrypt(ctx, sealed, ad)
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

// signupSecrets are the state and code of a signup request, taken out of its URL by
// HideSecrets before anything (tracing, logs, error text) can record the URL.
type signupSecrets struct{ state, code string }

type signupSecretsKey struct{}

// HideSecrets moves the state and code query parameters of the signup routes into the
// request's context and off its URL, so otelhttp's span attributes and any logged URL never hold
// them: they are bearer secrets while they live. The service that mounts the flow wraps its
// whole handler, middleware included, in it.
func HideSecrets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ConnectPath && r.URL.Path != CallbackPath || r.URL.RawQuery == "" {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		sec := signupSecrets{state: q.Get("state"), code: q.Get("code")}
		q.Del("state")
		q.Del("code")
		r2 := r.Clone(context.WithValue(r.Context(), signupSecretsKey{}, sec))
		r2.URL.RawQuery = q.Encode()
		r2.RequestURI = r2.URL.RequestURI()
		next.ServeHTTP(w, r2)
	})
}

// TraceableGraphCall keeps out of tracing the Graph calls whose query holds a secret (the code
// exchange's code and app secret, debug_token's input token): otelhttp records the full URL as a
// span attribute. It is the filter of the Graph client's transport (api.NewDeps).
func TraceableGraphCall(r *http.Request) bool {
	q := r.URL.Query()
	return !q.Has("code") && !q.Has("client_secret") && !q.Has("input_token") && !q.Has("access_token")
}

func signupSecretsFrom(ctx context.Context) signupSecrets {
	sec, _ := ctx.Value(signupSecretsKey{}).(signupSecrets)
	return sec
}

// handleConnectPage answers the link: a page naming the tenant and its numbers, with the button
// that starts Meta's dialog. Opening it changes nothing (the link stays unused), so a preview
// by a mail or chat client cannot spend it.
func (s *Server) handleConnectPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if !s.cfg.Enabled() {
		page(w, http.StatusNotFound, "Not available", "WhatsApp connection is not configured on this service.")
		return
	}
	raw := signupSecretsFrom(ctx).state
	st, rec, ok := s.linkTenant(w, r, raw)
	if !ok {
		return
	}
	used, err := s.deps.Tenants.ConnectStateUsed(ctx, st.Nonce)
	if err != nil {
		s.failPage(w, r, "read the link's use", err)
		return
	}
	if used {
		page(w, http.StatusBadRequest, "Link already used", "This connection link was used already. Nothing was changed; ask for a new link.")
		return
	}
	browser := randid.Hex(32)
	if c, err := r.Cookie(connectCookie); err == nil && validBrowserToken(c.Value) {
		browser = c.Value // a reload keeps the token another tab may hold
	}
	http.SetCookie(w, s.browserCookie(browser, int(ConnectLinkTTL.Seconds())))
	t := rec.Tenant
	d := pageData{
		Title:   "Connect WhatsApp to " + t.Name,
		Message: "You are about to connect WhatsApp Business to " + t.Name + " (" + t.ID + ") on wapipe.",
		Form:    &pageForm{Action: ConnectPath, Button: "Continue with Facebook", Link: raw, CSRF: browser},
	}
	if len(t.PhoneNumbers) == 0 {
		d.Notes = []string{
			"This business has no WhatsApp number yet: the accounts you share in Meta's dialog, and their numbers, will be connected to it.",
		}
	} else {
		d.Items = make([]string, 0, len(t.PhoneNumbers))
		for _, p := range t.PhoneNumbers {
			d.Items = append(d.Items, "number "+mask(p.PhoneNumberID)+" (WhatsApp Business Account "+mask(p.WABAID)+")")
		}
		d.Notes = []string{
			"Its current numbers are listed above. Log in with the Meta account that manages their WhatsApp Business Account(s) and share them in the dialog: the connection is refused otherwise, and nothing changes.",
			"Another account you share is not connected by this link: an operator must approve it first.",
		}
	}
	d.Notes = append(d.Notes, "The button works once: if you do not finish, ask for a new link.")
	render(w, http.StatusOK, d)
}

// linkTenant opens a link's state and reads its tenant, or answers the page saying why not.
func (s *Server) linkTenant(w http.ResponseWriter, r *http.Request, raw string) (connectState, store.TenantRecord, bool) {
	ctx := r.Context()
	st, err := s.openState(ctx, raw, stateAD)
	if err != nil {
		s.statePage(w, r, err)
		return st, store.TenantRecord{}, false
	}
	rec, err := s.deps.Tenants.Get(ctx, st.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		page(w, http.StatusBadRequest, "Not connected", "This link is for a business that no longer exists. Nothing was changed.")
		return st, rec, false
	}
	if err != nil {
		s.failPage(w, r, "read the tenant", err)
		return st, rec, false
	}
	return st, rec, true
}

// maxConnectForm caps the button's form: a state and a token.
const maxConnectForm = 8 << 10

// handleConnectStart is the page's button: it spends the link, and sends the browser to Meta's
// dialog with a new state valid OAuthStateTTL, usable once, bound to the tenant and to this
// browser. Cross-origin posts and posts without the page's token are refused.
func (s *Server) handleConnectStart() http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logging.FromContext(r.Context()).WarnContext(r.Context(), "embedded signup refused: cross-origin post", "event", "signup_refused", "reason", "cross_origin")
		page(w, http.StatusForbidden, "Not started", "This request did not come from the connection page. Nothing was changed; open your link again.")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if !s.cfg.Enabled() {
			page(w, http.StatusNotFound, "Not available", "WhatsApp connection is not configured on this service.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxConnectForm)
		if err := r.ParseForm(); err != nil {
			page(w, http.StatusBadRequest, "Not started", "The form could not be read. Nothing was changed; open your link again.")
			return
		}
		c, err := r.Cookie(connectCookie)
		if err != nil || !validBrowserToken(c.Value) || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 {
			logging.FromContext(ctx).WarnContext(ctx, "embedded signup refused: no page token", "event", "signup_refused", "reason", "csrf")
			page(w, http.StatusForbidden, "Not started", "This request did not come from the connection page in this browser. Nothing was changed; open your link again.")
			return
		}
		st, _, ok := s.linkTenant(w, r, r.PostForm.Get("link"))
		if !ok {
			return
		}
		ctx, logger := logging.With(ctx, "tenant_id", st.TenantID)
		if !s.useState(w, r.WithContext(ctx), st) {
			return
		}
		oauth, err := sealState(ctx, s.deps.Keeper, s.keyer(), connectState{TenantID: st.TenantID,
			Expires: s.deps.Now().Add(OAuthStateTTL).Unix(), Browser: hashHex(c.Value)}, oauthStateAD)
		if err != nil {
			s.failPage(w, r, "start the dialog", err)
			return
		}
		q := url.Values{
			"client_id":                      {s.cfg.AppID},
			"config_id":                      {s.cfg.ConfigID},
			"response_type":                  {"code"},
			"override_default_response_type": {"true"},
			"redirect_uri":                   {s.callbackURL()},
			"state":                          {oauth},
			"extras":                         {`{"setup":{},"featureType":"","sessionInfoVersion":"3"}`},
		}
		http.SetCookie(w, s.browserCookie(c.Value, int(OAuthStateTTL.Seconds())))
		logger.InfoContext(ctx, "embedded signup started", "event", "signup_started")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, s.cfg.DialogURL+"?"+q.Encode(), http.StatusSeeOther)
	}))
}

// useState records the one use of a link's or the dialog's state, or answers the page saying why
// not.
func (s *Server) useState(w http.ResponseWriter, r *http.Request, st connectState) bool {
	ctx := r.Context()
	err := s.deps.Tenants.UseConnectState(ctx, st.Nonce, st.TenantID, time.Unix(st.Expires, 0).Add(24*time.Hour))
	switch {
	case errors.Is(err, store.ErrStateUsed):
		logging.FromContext(ctx).WarnContext(ctx, "embedded signup refused: the link was used already", "event", "signup_refused", "reason", "state_reused")
		page(w, http.StatusBadRequest, "Link already used", "This connection link was used already. Nothing was changed; ask for a new link.")
		return false
	case err != nil:
		s.failPage(w, r, "record the link's use", err)
		return false
	}
	return true
}

func (s *Server) callbackURL() string {
	return strings.TrimRight(s.cfg.PublicBaseURL, "/") + CallbackPath
}

// browserCookie is the connect cookie with value, for maxAge seconds (negative: delete it).
func (s *Server) browserCookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: connectCookie, Value: value, Path: "/integrations/meta/whatsapp/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(s.cfg.PublicBaseURL, "https://")}
}

func validBrowserToken(v string) bool {
	b, err := hex.DecodeString(v)
	return err == nil && len(b) == 32
}

func hashHex(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:])
}

// handleCallback finishes Embedded Signup. The dialog's state is checked (sealed, unexpired,
// this browser's) and used once; the code is exchanged at once for a token that debug_token
// must accept. The accounts the token grants must include every account the tenant has (a tenant
// with no number takes what it grants): otherwise nothing changes. Only then is the app
// subscribed, are the numbers of the tenant's accounts registered and the token stored; accounts
// granted beyond the tenant's are remembered for an operator to approve, not attached.
func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	if !s.cfg.Enabled() {
		page(w, http.StatusNotFound, "Not available", "WhatsApp connection is not configured on this service.")
		return
	}
	sec := signupSecretsFrom(ctx)
	st, err := s.openState(ctx, sec.state, oauthStateAD)
	if err != nil {
		s.statePage(w, r, err)
		return
	}
	ctx, logger = logging.With(ctx, "tenant_id", st.TenantID)
	if c, err := r.Cookie(connectCookie); err != nil || subtle.ConstantTimeCompare([]byte(hashHex(c.Value)), []byte(st.Browser)) != 1 {
		logger.WarnContext(ctx, "embedded signup refused: callback in another browser", "event", "signup_refused", "reason", "browser_mismatch")
		page(w, http.StatusForbidden, "Not connected", "This connection was started in another browser. Nothing was changed; open your link in the browser you use for Facebook.")
		return
	}
	http.SetCookie(w, s.browserCookie("", -1))
	if !s.useState(w, r.WithContext(ctx), st) {
		return
	}
	if sec.code == "" {
		logger.InfoContext(ctx, "embedded signup cancelled or refused at Meta", "event", "signup_cancelled")
		page(w, http.StatusBadRequest, "Not connected", "Meta did not complete the connection (cancelled or refused). Nothing was changed; ask for a new link to try again.")
		return
	}
	rec, err := s.deps.Tenants.Get(ctx, st.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		page(w, http.StatusBadRequest, "Not connected", "This link is for a business that no longer exists. Nothing was changed.")
		return
	}
	if err != nil {
		s.failPage(w, r, "read the tenant", err)
		return
	}
	res, err := s.connect(ctx, rec, sec.code)
	var ref *connectRefusal
	switch {
	case errors.As(err, &ref):
		logger.WarnContext(ctx, "embedded signup refused", "event", "signup_refused", "reason", ref.reason,
			"granted", res.granted, "missing", res.missing)
		page(w, http.StatusForbidden, "Not connected", ref.message+" Nothing was changed: no number, no token, no subscription.")
		return
	case err != nil:
		logger.ErrorContext(ctx, "embedded signup failed", "event", "signup_failed", "error", err)
		page(w, http.StatusBadGateway, "Not connected", "The connection with Meta failed: "+userReason(err)+". Nothing was changed; ask for a new link to try again.")
		return
	}
	logger.InfoContext(ctx, "embedded signup completed", "event", "signup_completed", "numbers", len(res.numbers),
		"added", len(res.added), "accounts", len(res.wabas), "awaiting_approval", len(res.extra), "released", res.released)
	d := pageData{Title: "Connected", Message: fmt.Sprintf("WhatsApp is connected to %s: %d number(s), webhooks subscribed for %d account(s).",
		rec.Tenant.Name, len(res.numbers), len(res.wabas))}
	for _, n := range res.numbers {
		d.Items = append(d.Items, "number "+mask(n))
	}
	if len(res.extra) > 0 {
		masked := make([]string, 0, len(res.extra))
		for _, w := range res.extra {
			masked = append(masked, mask(w))
		}
		d.Notes = append(d.Notes, fmt.Sprintf("Your login also shared %d other WhatsApp Business Account(s) (%s): they are not connected. An operator must approve them; they are recorded as awaiting approval.",
			len(res.extra), strings.Join(masked, ", ")))
	}
	if res.released > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d waiting message(s) are being sent now.", res.released))
	}
	if res.releaseErr != nil {
		d.Notes = append(d.Notes, "Some waiting messages could not be released yet; an operator will finish it.")
	}
	render(w, http.StatusOK, d)
}

type connectResult struct {
	// wabas are the accounts connected (subscribed, numbers registered); extra those granted
	// beyond the tenant's, awaiting approval.
	wabas, extra, numbers, added []string
	// granted and missing count the accounts the token grants and the tenant's it does not.
	granted, missing int
	released         int
	releaseErr       error
}

// connectError is a failure to show the admin in plain words.
type connectError struct {
	reason string
	err    error
}

func (e *connectError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// connectRefusal is a login wapipe refuses: a reason for the log, a message for the page that
// names nothing of another business.
type connectRefusal struct{ reason, message string }

func (e *connectRefusal) Error() string { return "refused: " + e.reason }

func userReason(err error) string {
	var ce *connectError
	if errors.As(err, &ce) {
		return ce.reason
	}
	return "an internal error"
}

// grantedWABAs are the accounts debug_token's granular scopes say the token may manage or
// message, each once, in Meta's order.
func grantedWABAs(info graph.TokenInfo) []string {
	var out []string
	for _, g := range info.GranularScopes {
		if g.Scope != "whatsapp_business_management" && g.Scope != graph.ScopeMessaging {
			continue
		}
		for _, id := range g.TargetIDs {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// connect runs the Graph side of the callback and registers the result. Every check (the
// token, the accounts it grants, the numbers' owners) comes before the first change: the app's
// subscription.
func (s *Server) connect(ctx context.Context, rec store.TenantRecord, code string) (connectResult, error) {
	var res connectResult
	tenantID := rec.Tenant.ID
	token, err := s.deps.Graph.ExchangeCode(ctx, s.cfg.AppID, s.cfg.AppSecret, s.callbackURL(), code)
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
	granted := grantedWABAs(info)
	have := rec.Tenant.WABAs()
	res.granted = len(granted)
	if len(granted) == 0 {
		return res, &connectRefusal{"no_account_shared", "No WhatsApp Business Account was shared in Meta's dialog."}
	}
	var missing []string
	res.wabas, res.extra, missing = wabasToConnect(granted, have)
	res.missing = len(missing)
	if len(missing) > 0 {
		for i, w := range missing {
			missing[i] = mask(w)
		}
		return res, &connectRefusal{"accounts_not_granted", fmt.Sprintf(
			"The Meta login you used does not share the WhatsApp Business Account(s) this business already uses (%s). Log in with the Meta account that manages them, share them in the dialog, and ask for a new link.",
			strings.Join(missing, ", "))}
	}
	nums, err := accountNumbers(ctx, gc, &res)
	if err != nil {
		return res, err
	}
	if len(nums) == 0 {
		return res, &connectRefusal{"no_phone_number", "The WhatsApp Business Account you shared has no phone number yet: add one in WhatsApp Manager first."}
	}
	var ps tenant.Problems
	if err := s.deps.Tenants.CheckPhoneNumbers(ctx, tenantID, nums); errors.As(err, &ps) {
		return res, &connectRefusal{"number_of_another_tenant", "A number of the account you shared is connected to another business on wapipe. Ask the operator."}
	} else if err != nil {
		return res, err
	}
	for _, waba := range res.wabas {
		if err := gc.SubscribeApp(ctx, waba); err != nil {
			return res, &connectError{"the app could not subscribe to the account's webhooks", err}
		}
	}
	res.added, err = s.deps.Tenants.AddPhoneNumbers(ctx, tenantID, nums)
	if errors.As(err, &ps) {
		return res, &connectRefusal{"number_of_another_tenant", "A number of the account you shared is connected to another business on wapipe. Ask the operator."}
	}
	if err != nil {
		return res, err
	}
	if err := s.deps.Tenants.RecordWABAGrants(ctx, tenantID, res.extra); err != nil {
		return res, err
	}
	if err := s.storeToken(ctx, tenantID, token); err != nil {
		return res, err
	}
	res.released, res.releaseErr = outbox.ReleaseParked(ctx, s.deps.Sends, s.deps.Tasks, tenantID, httpserver.CorrelationID(ctx))
	if res.releaseErr != nil {
		logging.FromContext(ctx).ErrorContext(ctx, "parked sends not all released: run wapipe tenants set-token or connect again",
			"event", "release_failed", "error", res.releaseErr)
	}
	return res, nil
}

// accountNumbers lists the phone numbers of the WABAs res connects, noting their ids in res.
func accountNumbers(ctx context.Context, gc *graph.Client, res *connectResult) ([]tenant.PhoneNumber, error) {
	var nums []tenant.PhoneNumber
	for _, waba := range res.wabas {
		pns, err := gc.PhoneNumbers(ctx, waba)
		if err != nil {
			return nil, &connectError{"the account's phone numbers could not be read", err}
		}
		for _, p := range pns {
			nums = append(nums, tenant.PhoneNumber{PhoneNumberID: p.ID, WABAID: waba})
			res.numbers = append(res.numbers, p.ID)
		}
	}
	return nums, nil
}

// storeToken seals the tenant's new access token and stores it.
func (s *Server) storeToken(ctx context.Context, tenantID, token string) error {
	sealed, err := s.deps.Keeper.Encrypt(ctx, []byte(token), secrets.AD(tenantID, secrets.PurposeAccessToken))
	if err != nil {
		return fmt.Errorf("seal the token: %w", err)
	}
	if _, err := s.deps.Tenants.SetAccessToken(ctx, tenantID, sealed); err != nil {
		return fmt.Errorf("store the token: %w", err)
	}
	return nil
}

// wabasToConnect decides what a login's granted WABAs connect: a tenant with none yet takes all
// of them; otherwise the tenant's own, every one of which must be granted (missing lists those
// that are not), and the others granted are extra, left for the operator (approve-waba).
func wabasToConnect(granted, have []string) (wabas, extra, missing []string) {
	if len(have) == 0 {
		return granted, nil, nil
	}
	for _, w := range have {
		if !slices.Contains(granted, w) {
			missing = append(missing, w)
		}
	}
	for _, w := range granted {
		if !slices.Contains(have, w) {
			extra = append(extra, w)
		}
	}
	return have, extra, missing
}

// mask shows the last four digits of an id or number: enough to recognise one's own.
func mask(id string) string {
	if len(id) <= 4 {
		return "…" + id
	}
	return "…" + id[len(id)-4:]
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
		page(w, http.StatusBadRequest, "Link expired", "This connection link has expired (links are valid one hour, Meta's dialog ten minutes). Nothing was changed; ask for a new link.")
	default:
		s.failPage(w, r, "open the link", err)
	}
}

func (s *Server) failPage(w http.ResponseWriter, r *http.Request, what string, err error) {
	logging.FromContext(r.Context()).ErrorContext(r.Context(), "embedded signup: could not "+what, "event", "signup_unavailable", "error", err)
	page(w, http.StatusServiceUnavailable, "Try again", "The service could not complete this step. Nothing was changed; try the link again in a minute.")
}
