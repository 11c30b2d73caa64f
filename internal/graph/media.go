package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
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

// MB is Meta's megabyte in its media limits.
const MB = 1_000_000

// UploadType is a kind of file Meta takes: the message type that sends it and Meta's size limit.
type UploadType struct {
	// Kind is the message type: image, audio, video, document or sticker.
	Kind string
	// MaxBytes is Meta's limit for the kind (Cloud API reference, "Supported media types"),
	// at most MaxUploadBytes.
	MaxBytes int64
}

// MaxUploadBytes caps every upload (Meta takes documents up to 100 MB): a file passes through
// one request to the api and one to the worker, and Cloud Run refuses requests over 32 MiB, so
// 30 MiB leaves room for the form around the file.
const MaxUploadBytes = 30 << 20

// uploadTypes are the MIME types Meta takes, without parameters (documents: Meta's 100 MB, capped
// at MaxUploadBytes). WebP is only ever a sticker: Meta's images are JPEG and PNG.
var uploadTypes = map[string]UploadType{
	"image/jpeg": {"image", 5 * MB}, "image/png": {"image", 5 * MB},
	"image/webp": {"sticker", 500_000},
	"audio/aac":  {"audio", 16 * MB}, "audio/amr": {"audio", 16 * MB}, "audio/mpeg": {"audio", 16 * MB},
	"audio/mp4": {"audio", 16 * MB}, "audio/ogg": {"audio", 16 * MB},
	"video/mp4": {"video", 16 * MB}, "video/3gpp": {"video", 16 * MB},
	"text/plain": {"document", MaxUploadBytes}, "application/pdf": {"document", MaxUploadBytes},
	"application/msword": {"document", MaxUploadBytes}, "application/vnd.ms-excel": {"document", MaxUploadBytes},
	"application/vnd.ms-powerpoint":                                             {"document", MaxUploadBytes},
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   {"document", MaxUploadBytes},
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         {"document", MaxUploadBytes},
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": {"document", MaxUploadBytes},
}

// UploadTypeOf returns the MIME type without parameters and its UploadType, or false for a type
// Meta refuses. Ogg audio must be Opus: a codecs parameter naming another codec is refused.
func UploadTypeOf(mimeType string) (string, UploadType, bool) {
	base, params, err := mime.ParseMediaType(mimeType)
	if err != nil {
		return "", UploadType{}, false
	}
	t, ok := uploadTypes[base]
	if c, has := params["codecs"]; ok && base == "audio/ogg" && has && !strings.EqualFold(c, "opus") {
		return base, UploadType{}, false
	}
	return base, t, ok
}

// errUploadAnswered closes an upload's body once Graph has answered: whatever is left of the file
// is not sent.
var errUploadAnswered = errors.New("graph answered the upload")

// UploadMedia uploads the file read from r to POST {base}/{phoneNumberID}/media as Meta's
// multipart form (messaging_product=whatsapp, type=mimeType, file with filename) and returns
// Meta's media id. The file is streamed: it is read from r in the caller's goroutine and written
// to the request as it goes, never held whole. A read error of r aborts the request before its
// form is complete, so Graph keeps nothing; it is returned wrapped. UploadMedia reads r no more
// once it has returned.
func (c *Client) UploadMedia(ctx context.Context, phoneNumberID, mimeType, filename string, r io.Reader) (string, error) {
	switch {
	case phoneNumberID == "" || strings.ContainsAny(phoneNumberID, "/?#"):
		return "", fmt.Errorf("upload media: %w: phone number id must be a single path segment", ErrInvalidMessage)
	case mimeType == "" || strings.ContainsAny(mimeType, "\r\n"):
		return "", fmt.Errorf("upload media: %w: a MIME type is required", ErrInvalidMessage)
	case c.token == "":
		return "", ErrNoToken
	}
	pr, pw := io.Pipe()
	form := multipart.NewWriter(pw)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/"+url.PathEscape(phoneNumberID)+"/media", pr)
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", form.FormDataContentType())
	req.Header.Set("Accept", "application/json")

	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := c.hc.Do(req)
		// Graph has answered (or the call failed): the writer below stops at its next write
		// instead of waiting on a body nobody reads.
		pr.CloseWithError(errUploadAnswered)
		answered <- answer{resp, err}
	}()
	werr := writeUploadForm(form, mimeType, filename, r)
	// nil closes the body with EOF: the form is complete. An error cuts the body short.
	pw.CloseWithError(werr)
	a := <-answered
	if a.err != nil {
		if werr != nil && !errors.Is(werr, io.ErrClosedPipe) && !errors.Is(werr, errUploadAnswered) {
			return "", fmt.Errorf("upload media: %w", werr)
		}
		return "", transportError("POST media", a.err)
	}
	defer a.resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(a.resp.Body, maxResponseBytes))
	if err != nil {
		return "", &Error{HTTPStatus: a.resp.StatusCode, Kind: Temporary, err: fmt.Errorf("read response: %w", err)}
	}
	if a.resp.StatusCode < 200 || a.resp.StatusCode >= 300 {
		return "", c.apiError(a.resp, data)
	}
	if werr != nil {
		// Graph said yes to a form that was cut short: not the file that was meant.
		return "", fmt.Errorf("upload media: %w", werr)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.ID == "" {
		return "", &Error{HTTPStatus: a.resp.StatusCode, Kind: Permanent, err: fmt.Errorf("%w: no id in the upload's answer", ErrUnexpectedResponse)}
	}
	return out.ID, nil
}

// writeUploadForm writes Meta's upload form, the file copied from r, and closes it.
func writeUploadForm(form *multipart.Writer, mimeType, filename string, r io.Reader) error {
	for _, f := range [][2]string{{"messaging_product", "whatsapp"}, {"type", mimeType}} {
		if err := form.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	disposition := mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": filename})
	if filename == "" || disposition == "" {
		// No name, or one no header can carry: Meta needs one, any will do.
		disposition = `form-data; name="file"; filename="file"`
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", mimeType)
	part, err := form.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, r); err != nil {
		return err
	}
	return form.Close()
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
		return nil, transportError("GET media", err)
	}
	return resp, nil
}

// transportError is a media call that got no answer, a temporary failure: its text leaves the
// URL out (url.Error quotes it), since a download URL is a capability for the file.
func transportError(op string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &Error{Kind: Temporary, err: fmt.Errorf("%s: %w", op, err)}
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
