package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one Graph API call when NewClient builds the *http.Client. Meta
// usually answers in well under a second; 15 s leaves room for a slow moment while staying far
// inside a Cloud Tasks dispatch deadline.
const DefaultTimeout = 15 * time.Second

// maxResponseBytes caps how much of a response is read: Meta's answers are a few hundred bytes,
// and an error page from a proxy must not be buffered whole.
const maxResponseBytes = 1 << 20

// ErrInvalidMessage is wrapped by errors about a message the client refuses to send (too many
// buttons, missing fields…). Classify reports them Permanent.
var ErrInvalidMessage = errors.New("invalid message")

// ErrUnexpectedResponse is wrapped by the *Error of a 2xx response that is not the documented
// answer.
var ErrUnexpectedResponse = errors.New("unexpected Graph API response")

// Client calls the WhatsApp Cloud API. It is safe for concurrent use.
type Client struct {
	baseURL string
	token   string
	hc      *http.Client
	now     func() time.Time
}

// ErrNoToken is returned by a call made with no access token: NewClient was given none and the
// call did not go through WithToken. No request is made.
var ErrNoToken = errors.New("graph access token is empty")

// NewClient returns a client for baseURL (e.g. DefaultBaseURL; a trailing
// slash is fine) that authenticates with accessToken. accessToken may be empty when every call
// goes through WithToken (one client serving many tenants). hc nil means an *http.Client with
// DefaultTimeout.
func NewClient(baseURL, accessToken string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("graph base URL %q must be an absolute http(s) URL", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), token: accessToken, hc: hc, now: time.Now}, nil
}

// WithToken returns a copy of c that authenticates with accessToken and shares c's HTTP
// client: the client of one tenant's call.
func (c *Client) WithToken(accessToken string) *Client {
	cc := *c
	cc.token = accessToken
	return &cc
}

// SendResult is Meta's answer to a send.
type SendResult struct {
	// MessageID is the wamid of the sent message (messages[0].id).
	MessageID string
	// WaID is the recipient's WhatsApp id (contacts[0].wa_id) when the message went to a phone
	// number; empty when it went by BSUID, for which Meta answers UserID instead.
	WaID string
	// UserID is the recipient's business-scoped user id (contacts[0].user_id) when the message
	// went by Recipient; empty when it went to a phone number.
	UserID string
	// MessageStatus is set for some template sends ("accepted", "held_for_quality_assessment").
	MessageStatus string
}

// Send posts any message. MessagingProduct is set to "whatsapp". Type is required, and To or
// Recipient (see Message): a message with neither is refused with ErrNoAddress, one whose To
// is not a phone number (a BSUID belongs in Recipient) with ErrToNotPhone, one whose Recipient
// is a phone number with ErrRecipientNotUserID, all before any call and all Permanent. A message
// with both goes as given: Meta sends it to To.
func (c *Client) Send(ctx context.Context, phoneNumberID string, m Message) (SendResult, error) {
	if m.Type == "" {
		return SendResult{}, fmt.Errorf("send: %w: type is required", ErrInvalidMessage)
	}
	if err := checkAddress(m); err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	m.MessagingProduct = "whatsapp"
	var resp struct {
		// Meta names who it sent to by wa_id or, for a send by BSUID, by user_id: neither is
		// required, the wamid is what matters.
		Contacts []struct {
			Input  string `json:"input"`
			WaID   string `json:"wa_id"`
			UserID string `json:"user_id"`
		} `json:"contacts"`
		Messages []struct {
			ID            string `json:"id"`
			MessageStatus string `json:"message_status"`
		} `json:"messages"`
	}
	if err := c.post(ctx, phoneNumberID, m, &resp); err != nil {
		return SendResult{}, err
	}
	if len(resp.Messages) == 0 || resp.Messages[0].ID == "" {
		// Meta said yes but not what it sent: the message may well be on its way, so this is
		// not retryable (a retry could deliver it twice).
		return SendResult{}, &Error{HTTPStatus: http.StatusOK, Kind: Permanent,
			err: fmt.Errorf("%w: no messages[0].id", ErrUnexpectedResponse)}
	}
	r := SendResult{MessageID: resp.Messages[0].ID, MessageStatus: resp.Messages[0].MessageStatus}
	if len(resp.Contacts) > 0 {
		r.WaID, r.UserID = resp.Contacts[0].WaID, resp.Contacts[0].UserID
	}
	return r, nil
}

// The helpers below send to a phone number: to is Message.To, so a BSUID passed as to is refused
// with ErrToNotPhone. To reach someone by BSUID, build the Message with Recipient and call Send.

// SendText sends a text message (t.PreviewURL asks for a link preview) to the phone number to.
func (c *Client) SendText(ctx context.Context, phoneNumberID, to string, t Text, o SendOptions) (SendResult, error) {
	if t.Body == "" {
		return SendResult{}, fmt.Errorf("send text: %w: empty body", ErrInvalidMessage)
	}
	m := Message{To: to, Type: "text", Text: &t}
	o.apply(&m)
	return c.Send(ctx, phoneNumberID, m)
}

// SendButtons sends an interactive message with one to three reply buttons to the phone number
// to.
func (c *Client) SendButtons(ctx context.Context, phoneNumberID, to string, b Buttons, o SendOptions) (SendResult, error) {
	if b.Body == "" || len(b.Buttons) == 0 || len(b.Buttons) > MaxReplyButtons {
		return SendResult{}, fmt.Errorf("send buttons: %w: need a body and 1 to %d buttons, got %d", ErrInvalidMessage, MaxReplyButtons, len(b.Buttons))
	}
	it := &Interactive{Type: "button"}
	it.Header, it.Body, it.Footer = interactiveParts(b.Header, b.Body, b.Footer)
	for _, btn := range b.Buttons {
		if btn.ID == "" || btn.Title == "" {
			return SendResult{}, fmt.Errorf("send buttons: %w: a button needs an id and a title", ErrInvalidMessage)
		}
		it.Action.Buttons = append(it.Action.Buttons, ActionButton{Type: "reply", Reply: ButtonReply(btn)})
	}
	m := Message{To: to, Type: "interactive", Interactive: it}
	o.apply(&m)
	return c.Send(ctx, phoneNumberID, m)
}

// SendList sends an interactive list, up to ten sections and ten rows in all, to the phone
// number to.
func (c *Client) SendList(ctx context.Context, phoneNumberID, to string, l List, o SendOptions) (SendResult, error) {
	rows := 0
	for _, s := range l.Sections {
		rows += len(s.Rows)
	}
	switch {
	case l.Body == "" || l.ButtonText == "":
		return SendResult{}, fmt.Errorf("send list: %w: need a body and a button text", ErrInvalidMessage)
	case len(l.Sections) == 0 || len(l.Sections) > MaxListSections:
		return SendResult{}, fmt.Errorf("send list: %w: need 1 to %d sections, got %d", ErrInvalidMessage, MaxListSections, len(l.Sections))
	case rows == 0 || rows > MaxListRows:
		return SendResult{}, fmt.Errorf("send list: %w: need 1 to %d rows, got %d", ErrInvalidMessage, MaxListRows, rows)
	}
	it := &Interactive{Type: "list", Action: Action{Button: l.ButtonText, Sections: l.Sections}}
	it.Header, it.Body, it.Footer = interactiveParts(l.Header, l.Body, l.Footer)
	m := Message{To: to, Type: "interactive", Interactive: it}
	o.apply(&m)
	return c.Send(ctx, phoneNumberID, m)
}

// SendTemplate sends a template message to the phone number to.
func (c *Client) SendTemplate(ctx context.Context, phoneNumberID, to string, t Template, o SendOptions) (SendResult, error) {
	if t.Name == "" || t.Language.Code == "" {
		return SendResult{}, fmt.Errorf("send template: %w: need a name and a language code", ErrInvalidMessage)
	}
	m := Message{To: to, Type: "template", Template: &t}
	o.apply(&m)
	return c.Send(ctx, phoneNumberID, m)
}

// MarkRead marks an inbound message (and the ones before it) as read: the customer sees blue
// ticks.
func (c *Client) MarkRead(ctx context.Context, phoneNumberID, messageID string) error {
	return c.markRead(ctx, phoneNumberID, messageID, false)
}

// ShowTyping marks an inbound message read and shows the customer the typing indicator, which
// Meta clears when the reply arrives or after 25 seconds.
func (c *Client) ShowTyping(ctx context.Context, phoneNumberID, messageID string) error {
	return c.markRead(ctx, phoneNumberID, messageID, true)
}

// typingIndicator is the typing indicator of a mark-as-read ({"type":"text"}).
type typingIndicator struct {
	Type string `json:"type"`
}

func (c *Client) markRead(ctx context.Context, phoneNumberID, messageID string, typing bool) error {
	if messageID == "" {
		return fmt.Errorf("mark read: %w: empty message id", ErrInvalidMessage)
	}
	body := struct {
		MessagingProduct string           `json:"messaging_product"`
		Status           string           `json:"status"`
		MessageID        string           `json:"message_id"`
		Typing           *typingIndicator `json:"typing_indicator,omitempty"`
	}{MessagingProduct: "whatsapp", Status: "read", MessageID: messageID}
	if typing {
		body.Typing = &typingIndicator{Type: "text"}
	}
	var resp struct {
		Success bool `json:"success"`
	}
	if err := c.post(ctx, phoneNumberID, body, &resp); err != nil {
		return err
	}
	if !resp.Success {
		return &Error{HTTPStatus: http.StatusOK, Kind: Permanent, err: fmt.Errorf("%w: success is not true", ErrUnexpectedResponse)}
	}
	return nil
}

// post sends body to {base}/{phoneNumberID}/messages and decodes a 2xx answer into out.
func (c *Client) post(ctx context.Context, phoneNumberID string, body, out any) error {
	if phoneNumberID == "" || strings.ContainsAny(phoneNumberID, "/?#") {
		return fmt.Errorf("%w: phone number id must be a single path segment", ErrInvalidMessage)
	}
	if c.token == "" {
		return ErrNoToken
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/"+url.PathEscape(phoneNumberID)+"/messages", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	var ct connTrace
	resp, err := c.hc.Do(req.WithContext(ct.withTrace(ctx)))
	if err != nil {
		// *url.Error names the URL (base and phone number id, no token) and the cause.
		return &Error{Kind: Temporary, NotSent: ct.notSent(err), err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return &Error{HTTPStatus: resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return &Error{HTTPStatus: resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: body is not JSON", ErrUnexpectedResponse)}
		}
		return nil
	}
	return c.apiError(resp, data)
}

// apiError builds the *Error of a non-2xx response.
func (c *Client) apiError(resp *http.Response, data []byte) *Error {
	var eb struct {
		Error *struct {
			Message      string `json:"message"`
			Type         string `json:"type"`
			Code         *int   `json:"code"`
			ErrorSubcode int    `json:"error_subcode"`
			ErrorData    struct {
				Details string `json:"details"`
			} `json:"error_data"`
			FBTraceID string `json:"fbtrace_id"`
		} `json:"error"`
	}
	e := &Error{
		HTTPStatus: resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
	}
	hasCode := false
	if json.Unmarshal(data, &eb) == nil && eb.Error != nil {
		ee := eb.Error
		e.Type, e.Subcode, e.FBTraceID = ee.Type, ee.ErrorSubcode, ee.FBTraceID
		e.Message, e.Details = c.redact(ee.Message), c.redact(ee.ErrorData.Details)
		if ee.Code != nil {
			e.Code, hasCode = *ee.Code, true
		}
	}
	e.Kind = classify(resp.StatusCode, e.Code, hasCode)
	return e
}

// redact removes the access token should Meta ever quote it back ("Malformed access token …").
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[redacted]")
}
