package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"time"

	"github.com/wapipe/wapipe/internal/api"
)

// apiClient calls the api service as a business does: Bearer key, JSON in and out.
type apiClient struct {
	base, key string
}

// apiTimeout bounds one call; an upload of a large document over a slow link is the longest.
const apiTimeout = 5 * time.Minute

// accepted is POST /v1/messages's answer.
type accepted struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// upload sends the file at path to POST /v1/media as multipart/form-data (part "file", its type
// from the extension, else sniffed), streamed: the file is never read whole into memory.
func (c *apiClient) upload(ctx context.Context, path, phoneNumberID string) (api.MediaUpload, error) {
	f, err := os.Open(path)
	if err != nil {
		return api.MediaUpload{}, fmt.Errorf("upload: %w", err)
	}
	defer f.Close()
	ctype, err := fileType(f, path)
	if err != nil {
		return api.MediaUpload{}, fmt.Errorf("upload %s: %w", filepath.Base(path), err)
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(writeUpload(mw, f, filepath.Base(path), ctype, phoneNumberID))
	}()
	var m api.MediaUpload
	err = c.call(ctx, http.MethodPost, "/v1/media", mw.FormDataContentType(), pr, "", http.StatusCreated, &m)
	pr.Close() // ends the writer when the api answered before reading it all
	if err != nil {
		return m, fmt.Errorf("upload %s: %w", filepath.Base(path), err)
	}
	if m.ID == "" {
		return m, fmt.Errorf("upload %s: the api answered no media id", filepath.Base(path))
	}
	return m, nil
}

// writeUpload writes the form: phone_number_id when given, then the file.
func writeUpload(mw *multipart.Writer, f io.Reader, name, ctype, phoneNumberID string) error {
	if phoneNumberID != "" {
		if err := mw.WriteField("phone_number_id", phoneNumberID); err != nil {
			return err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name}))
	h.Set("Content-Type", ctype)
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, f); err != nil {
		return err
	}
	return mw.Close()
}

// fileType is the file's MIME type: from its extension, else from its first bytes (the api and
// Meta take the part's Content-Type as the file's type).
func fileType(f *os.File, path string) (string, error) {
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t, nil
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return http.DetectContentType(head[:n]), nil
}

// send posts body to POST /v1/messages.
func (c *apiClient) send(ctx context.Context, body any, idem string) (accepted, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return accepted{}, fmt.Errorf("encode the message: %w", err)
	}
	var a accepted
	if err := c.call(ctx, http.MethodPost, "/v1/messages", "application/json", bytes.NewReader(b), idem, http.StatusAccepted, &a); err != nil {
		return a, fmt.Errorf("send: %w", err)
	}
	if a.ID == "" {
		return a, errors.New("send: the api answered no message id")
	}
	return a, nil
}

// call makes one request and decodes a `want` answer into out; any other answer is an error
// with the api's code and message ({"error":{"code","message"}}).
func (c *apiClient) call(ctx context.Context, method, path, ctype string, body io.Reader, idem string, want int, out any) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", ctype)
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
			return fmt.Errorf("%d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("%s %s answered %s", method, path, resp.Status)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}
