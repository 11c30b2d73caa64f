package graphfake

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// FakeAppID is the app id the fake's debug_token reports.
const FakeAppID = "100000000000001"

// debugTokenPath matches /{version}/debug_token and /debug_token.
var debugTokenPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/debug_token/?$`)

// RevokeToken makes the fake treat token as revoked: debug_token reports it invalid and a send
// with it fails with code 190, as Meta does once a token is revoked.
func (f *Fake) RevokeToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revoked == nil {
		f.revoked = map[string]bool{}
	}
	f.revoked[token] = true
}

func (f *Fake) isRevoked(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revoked[token]
}

// serveDebugToken answers GET /debug_token?input_token=… in Meta's shape when r is one, and
// reports whether it was. Every token is valid unless revoked (RevokeToken, or POST
// /_fake/revoke_token {"token":"…"}), with the WhatsApp scopes.
func (f *Fake) serveDebugToken(w http.ResponseWriter, r *http.Request) bool {
	if !debugTokenPath.MatchString(r.URL.Path) {
		return false
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Kind: KindOther, Time: f.now()}
	status, resp := f.debugToken(r)
	rec.Status = status
	f.record(rec)
	writeJSON(w, status, resp)
	return true
}

func (f *Fake) debugToken(r *http.Request) (int, any) {
	if r.Method != http.MethodGet {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Type: "GraphMethodException",
			Message: "Unsupported " + strings.ToLower(r.Method) + " request"})
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || auth == "" || f.isRevoked(auth) {
		fl := Failure{HTTPStatus: http.StatusUnauthorized, Code: 190}.withDefaults()
		return fl.HTTPStatus, metaError(fl)
	}
	input := r.URL.Query().Get("input_token")
	if input == "" {
		return http.StatusBadRequest, metaError(Failure{Code: 100, Message: "(#100) The parameter input_token is required"}.withDefaults())
	}
	if f.isRevoked(input) {
		return http.StatusOK, map[string]any{"data": map[string]any{
			"app_id": FakeAppID, "type": "SYSTEM_USER", "is_valid": false, "expires_at": 0, "scopes": []string{},
			"error": map[string]any{"code": 190, "message": "Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.", "subcode": 460},
		}}
	}
	scopes := []string{"whatsapp_business_management", "whatsapp_business_messaging"}
	granular := []map[string]any{}
	for _, s := range scopes {
		g := map[string]any{"scope": s}
		if ids := f.targetIDs(input); len(ids) > 0 { // signup.go
			g["target_ids"] = ids
		}
		granular = append(granular, g)
	}
	return http.StatusOK, map[string]any{"data": map[string]any{
		"app_id": FakeAppID, "type": "SYSTEM_USER", "application": "wapipe fake", "is_valid": true,
		"expires_at": 0, "data_access_expires_at": 0, "scopes": scopes, "granular_scopes": granular,
	}}
}

// serveRevoke serves POST /_fake/revoke_token {"token":"…"}.
func (f *Fake) serveRevoke(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Token == "" || r.Method != http.MethodPost {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want POST {"token":"…"}`})
		return
	}
	f.RevokeToken(in.Token)
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}
