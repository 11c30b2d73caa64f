package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// ScopeMessaging is the permission a token needs to send WhatsApp messages.
const ScopeMessaging = "whatsapp_business_messaging"

// TokenInfo is Meta's description of an access token (GET /debug_token).
type TokenInfo struct {
	Valid bool   `json:"is_valid"`
	AppID string `json:"app_id"`
	Type  string `json:"type"`
	// ExpiresAt is the expiry in Unix seconds; 0 means never (system user tokens).
	ExpiresAt      int64           `json:"expires_at"`
	Scopes         []string        `json:"scopes"`
	GranularScopes []GranularScope `json:"granular_scopes"`
	// Error is Meta's reason when the token is not valid.
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// GranularScope is a permission and the objects (WABAs, pages) it covers.
type GranularScope struct {
	Scope     string   `json:"scope"`
	TargetIDs []string `json:"target_ids,omitempty"`
}

// HasScope reports whether the token has scope, among its granular scopes or its scopes.
func (t TokenInfo) HasScope(scope string) bool {
	return slices.ContainsFunc(t.GranularScopes, func(g GranularScope) bool { return g.Scope == scope }) ||
		slices.Contains(t.Scopes, scope)
}

// DebugToken asks Meta about inputToken (GET /debug_token?input_token=…), authenticating with
// the client's own token (a token may inspect itself). A token Meta no longer accepts comes back
// either as Valid false or, when it is also the client's token, as an *Error of Kind Auth.
func (c *Client) DebugToken(ctx context.Context, inputToken string) (TokenInfo, error) {
	u := c.baseURL + "/debug_token?" + url.Values{"input_token": {inputToken}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return TokenInfo{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		// Not the *url.Error: its URL carries the input token.
		return TokenInfo{}, &Error{Kind: Temporary, err: fmt.Errorf("GET debug_token: %s", c.redact(redactToken(err, inputToken)))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return TokenInfo{}, &Error{HTTPStatus: resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return TokenInfo{}, c.apiError(resp, data)
	}
	var out struct {
		Data *TokenInfo `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Data == nil {
		return TokenInfo{}, &Error{HTTPStatus: resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: no data in debug_token answer", ErrUnexpectedResponse)}
	}
	return *out.Data, nil
}

// redactToken renders err without token in it.
func redactToken(err error, token string) string {
	c := Client{token: token}
	if ue, ok := err.(*url.Error); ok {
		return c.redact(ue.Op + ": " + ue.Err.Error())
	}
	return c.redact(err.Error())
}
