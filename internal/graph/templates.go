package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// The message template calls of a WhatsApp Business Account (Business Management API), each
// with the client's token: list, create, delete.

// templateFields are the fields a listing asks for.
const templateFields = "name,language,status,category,components,id"

// templatePageSize is how many templates one listing page asks for, and maxTemplatePages bounds
// the pages followed: Meta allows at most a few thousand templates per account, and a paging
// loop must end even if an answer always names a next page.
const (
	templatePageSize = 100
	maxTemplatePages = 100
)

// MessageTemplate is one template of a listing.
type MessageTemplate struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Language string `json:"language"`
	// Status is APPROVED, PENDING, REJECTED, PAUSED, DISABLED, IN_APPEAL...
	Status   string `json:"status"`
	Category string `json:"category"`
	// Components are Meta's, as Meta sent them.
	Components json.RawMessage `json:"components,omitempty"`
}

// CreatedTemplate is Meta's answer to a template creation.
type CreatedTemplate struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Category string `json:"category"`
}

// ListTemplates lists every template of the WhatsApp Business Account wabaID (GET
// /{waba_id}/message_templates), following the pages by their after cursor.
func (c *Client) ListTemplates(ctx context.Context, wabaID string) ([]MessageTemplate, error) {
	path := "/" + segment(wabaID) + "/message_templates"
	q := url.Values{"fields": {templateFields}, "limit": {fmt.Sprint(templatePageSize)}}
	var all []MessageTemplate
	for range maxTemplatePages {
		var page struct {
			Data   []MessageTemplate `json:"data"`
			Paging struct {
				Cursors struct {
					After string `json:"after"`
				} `json:"cursors"`
				Next string `json:"next"`
			} `json:"paging"`
		}
		if err := c.call(ctx, http.MethodGet, path, q, true, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		// Meta names a next page only when there is one; its own URL is not followed, as it
		// carries Meta's host and may carry the token: the cursor is asked for on ours.
		if page.Paging.Next == "" || page.Paging.Cursors.After == "" || len(page.Data) == 0 {
			return all, nil
		}
		q.Set("after", page.Paging.Cursors.After)
	}
	return nil, &Error{HTTPStatus: http.StatusOK, Kind: Permanent,
		err: fmt.Errorf("%w: more than %d pages of templates", ErrUnexpectedResponse, maxTemplatePages)}
}

// CreateTemplate creates a template in the WhatsApp Business Account wabaID (POST
// /{waba_id}/message_templates) from body, Meta's creation body as the caller gave it.
func (c *Client) CreateTemplate(ctx context.Context, wabaID string, body json.RawMessage) (CreatedTemplate, error) {
	var out CreatedTemplate
	if err := c.callBody(ctx, http.MethodPost, "/"+segment(wabaID)+"/message_templates", nil, body, true, nil, &out); err != nil {
		return out, err
	}
	if out.ID == "" {
		return out, &Error{HTTPStatus: http.StatusOK, Kind: Permanent, err: fmt.Errorf("%w: no id", ErrUnexpectedResponse)}
	}
	return out, nil
}

// DeleteTemplate deletes the template name, in every language, from the WhatsApp Business
// Account wabaID (DELETE /{waba_id}/message_templates?name=…).
func (c *Client) DeleteTemplate(ctx context.Context, wabaID, name string) error {
	return c.deleteTemplate(ctx, wabaID, url.Values{"name": {name}})
}

// DeleteTemplateByID deletes the one template of Meta's id id (named name: one language) from
// wabaID (DELETE /{waba_id}/message_templates?name=…&hsm_id=…): on an account shared by several
// businesses, where a delete by name would take every language, whoever made it.
func (c *Client) DeleteTemplateByID(ctx context.Context, wabaID, name, id string) error {
	return c.deleteTemplate(ctx, wabaID, url.Values{"name": {name}, "hsm_id": {id}})
}

func (c *Client) deleteTemplate(ctx context.Context, wabaID string, q url.Values) error {
	var out struct {
		Success bool `json:"success"`
	}
	if err := c.call(ctx, http.MethodDelete, "/"+segment(wabaID)+"/message_templates", q, true, nil, &out); err != nil {
		return err
	}
	if !out.Success {
		return &Error{HTTPStatus: http.StatusOK, Kind: Permanent, err: fmt.Errorf("%w: success is not true", ErrUnexpectedResponse)}
	}
	return nil
}
