package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ErrMediaTooLarge is returned by DownloadMedia when the file is bigger than its limit: reading
// stopped there.
var ErrMediaTooLarge = errors.New("media larger than the limit")

// MediaInfo is Meta's description of a media file (GET /{media-id}): where to download it for
// the next few minutes, and what it is.
type MediaInfo struct {
	ID  string
	URL string
	// MIMEType is as Meta sends it, parameters included ("audio/ogg; codecs=opus").
	MIMEType string
	// SHA256 is the file's SHA-256, hex-encoded (the webhook's is base64).
	SHA256 string
	// FileSize is the size in bytes Meta reports; 0 when it gave none.
	FileSize int64
}

// MediaInfo looks up a media id (GET {base}/{media-id}) with the client's token. A media id
// Meta no longer has comes back as an *Error that IsMediaGone reports.
func (c *Client) MediaInfo(ctx context.Context, mediaID string) (MediaInfo, error) {
	if mediaID == "" || strings.ContainsAny(mediaID, "/?#") {
		return MediaInfo{}, fmt.Errorf("media info: %w: media id must be a single path segment", ErrInvalidMessage)
	}
	resp, err := c.get(ctx, c.baseURL+"/"+url.PathEscape(mediaID))
	if err != nil {
		return MediaInfo{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return MediaInfo{}, &Error{HTTPStatus: resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read response: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return MediaInfo{}, c.apiError(resp, data)
	}
	var out struct {
		ID       string          `json:"id"`
		URL      string          `json:"url"`
		MIMEType string          `json:"mime_type"`
		SHA256   string          `json:"sha256"`
		FileSize json.RawMessage `json:"file_size"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.URL == "" {
		return MediaInfo{}, &Error{HTTPStatus: resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: no url in the media lookup", ErrUnexpectedResponse)}
	}
	info := MediaInfo{ID: out.ID, URL: out.URL, MIMEType: out.MIMEType, SHA256: out.SHA256}
	// Meta documents file_size as a number and has sent it as a string.
	if s := strings.Trim(string(out.FileSize), `"`); s != "" && s != "null" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return MediaInfo{}, &Error{HTTPStatus: resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: file_size is not a size", ErrUnexpectedResponse)}
		}
		info.FileSize = n
	}
	return info, nil
}

// DownloadMedia GETs rawURL (a MediaInfo.URL) with the client's token, as Meta requires, and
// copies the file into w as it arrives. At most limit bytes are read: a bigger file stops the
// download at limit+1 bytes with ErrMediaTooLarge, whatever its Content-Length claims. A URL
// that expired or a file Meta no longer has comes back as an *Error that IsMediaGone reports.
func (c *Client) DownloadMedia(ctx context.Context, rawURL string, w io.Writer, limit int64) (int64, error) {
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, fmt.Errorf("download media: %w: not an absolute http(s) URL", ErrInvalidMessage)
	}
	resp, err := c.get(ctx, rawURL)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return 0, c.apiError(resp, data)
	}
	if resp.ContentLength > limit {
		return 0, fmt.Errorf("download media: %w (%d bytes announced, limit %d)", ErrMediaTooLarge, resp.ContentLength, limit)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return n, &Error{HTTPStatus: resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read media: %w", err)}
	case n > limit:
		return n, fmt.Errorf("download media: %w (limit %d bytes)", ErrMediaTooLarge, limit)
	}
	return n, nil
}

// get sends an authenticated GET. Its transport error leaves the URL out: a download URL is a
// capability for the file.
func (c *Client) get(ctx context.Context, rawURL string) (*http.Response, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		cause := err
		var ue *url.Error
		if errors.As(err, &ue) {
			cause = ue.Err
		}
		return nil, &Error{Kind: Temporary, err: fmt.Errorf("GET media: %w", cause)}
	}
	return resp, nil
}

// IsMediaGone reports whether err says Meta no longer has the media: the lookup of an unknown or
// expired id (code 100, subcode 33, which Meta answers with HTTP 400), or a download answered 404
// or 410.
func IsMediaGone(err error) bool {
	var ge *Error
	if !errors.As(err, &ge) {
		return false
	}
	return ge.HTTPStatus == http.StatusNotFound || ge.HTTPStatus == http.StatusGone ||
		ge.Code == 100 && ge.Subcode == 33
}
