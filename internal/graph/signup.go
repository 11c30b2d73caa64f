package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The calls of Embedded Signup: the code Meta's dialog returns is exchanged for a token, the app
// is subscribed to the WhatsApp Business Account's webhooks, and the account's numbers are read.

// ExchangeCode exchanges an Embedded Signup code for an access token (GET /oauth/access_token),
// server to server, with the app's id and secret. redirectURI is the one the dialog was opened
// with. Neither the code, the secret nor the token appear in errors.
func (c *Client) ExchangeCode(ctx context.Context, appID, appSecret, redirectURI, code string) (string, error) {
	if appID == "" || appSecret == "" || code == "" {
		return "", fmt.Errorf("exchange code: %w: app id, app secret and code are required", ErrInvalidMessage)
	}
	q := url.Values{"client_id": {appID}, "client_secret": {appSecret}, "code": {code}}
	if redirectURI != "" {
		q.Set("redirect_uri", redirectURI)
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := c.call(ctx, http.MethodGet, "/oauth/access_token", q, false, []string{appSecret, code}, &out); err != nil {
		return "", err
	}
	if out.AccessToken == "" {
		return "", &Error{HTTPStatus: http.StatusOK, Kind: Permanent, err: fmt.Errorf("%w: no access_token", ErrUnexpectedResponse)}
	}
	return out.AccessToken, nil
}

// SubscribeApp subscribes the app to the webhooks of the WhatsApp Business Account wabaID (POST
// /{waba_id}/subscribed_apps), with the client's token.
func (c *Client) SubscribeApp(ctx context.Context, wabaID string) error {
	var out struct {
		Success bool `json:"success"`
	}
	if err := c.call(ctx, http.MethodPost, "/"+segment(wabaID)+"/subscribed_apps", nil, true, nil, &out); err != nil {
		return err
	}
	if !out.Success {
		return &Error{HTTPStatus: http.StatusOK, Kind: Permanent, err: fmt.Errorf("%w: success is not true", ErrUnexpectedResponse)}
	}
	return nil
}

// PhoneNumber is one number of a WhatsApp Business Account.
type PhoneNumber struct {
	ID                 string `json:"id"`
	DisplayPhoneNumber string `json:"display_phone_number"`
	VerifiedName       string `json:"verified_name"`
}

// PhoneNumbers lists the numbers of the WhatsApp Business Account wabaID (GET
// /{waba_id}/phone_numbers), with the client's token.
func (c *Client) PhoneNumbers(ctx context.Context, wabaID string) ([]PhoneNumber, error) {
	var out struct {
		Data []PhoneNumber `json:"data"`
	}
	if err := c.call(ctx, http.MethodGet, "/"+segment(wabaID)+"/phone_numbers", nil, true, nil, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// segment escapes an id used as one path segment.
func segment(id string) string { return url.PathEscape(id) }

// call makes one Graph call and decodes a 2xx answer into out; withToken sends the client's
// token. hide are values (secrets, codes) that must not appear in an error.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, withToken bool, hide []string, out any) error {
	return c.callBody(ctx, method, path, q, nil, withToken, hide, out)
}

// callBody is call with a JSON body (none when body is nil).
func (c *Client) callBody(ctx context.Context, method, path string, q url.Values, body []byte, withToken bool, hide []string, out any) error {
	if withToken && c.token == "" {
		return ErrNoToken
	}
	u := c.baseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if withToken {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		// Not the *url.Error: its URL carries the query (a secret, a code).
		msg := redactToken(err, c.token)
		for _, h := range hide {
			if h != "" {
				msg = strings.ReplaceAll(msg, h, "[redacted]")
				msg = strings.ReplaceAll(msg, url.QueryEscape(h), "[redacted]")
			}
		}
		return &Error{Kind: Temporary, err: fmt.Errorf("%s %s: %s", method, path, msg)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return &Error{HTTPStatus: resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return c.apiError(resp, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{HTTPStatus: resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: body is not JSON", ErrUnexpectedResponse)}
	}
	return nil
}
