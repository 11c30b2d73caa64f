package graphfake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

// Request kinds of the media calls.
const (
	KindMedia    = "media"    // a media lookup, GET /{version}/{media-id}
	KindDownload = "download" // a media download, GET the lookup's url
)

// maxAdminMedia caps a file posted to /_fake/media: above Meta's largest (a 100 MB document is
// more than any test needs).
const maxAdminMedia = 64 << 20

// MediaFile is a media file the fake holds, as a test or the local stack sees it.
type MediaFile struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	// SHA256 is base64, as the webhook sends it; SHA256Hex is hex, as the lookup sends it.
	SHA256    string `json:"sha256"`
	SHA256Hex string `json:"sha256_hex"`
	FileSize  int64  `json:"file_size"`
}

// mediaFile is a held file.
type mediaFile struct {
	MediaFile
	// data is the content; nil for a generated file (its bytes are gen(i)).
	data    []byte
	expired bool
	// noLength serves the download without Content-Length, as a chunked answer.
	noLength bool
	// lookupSize, when set, is the file_size the lookup reports.
	lookupSize *int64
}

// MediaOption configures AddMedia.
type MediaOption func(*mediaFile)

// WithoutContentLength serves the file's download without a Content-Length (chunked), so the
// client cannot tell its size before reading: the download's size cap must hold while reading.
func WithoutContentLength() MediaOption { return func(m *mediaFile) { m.noLength = true } }

// WithLookupSHA256 makes the lookup report sha256Hex instead of the file's real hash.
func WithLookupSHA256(sha256Hex string) MediaOption {
	return func(m *mediaFile) { m.SHA256Hex = sha256Hex }
}

// WithLookupFileSize makes the lookup report n bytes whatever the file's size: a client must not
// trust it to bound the download.
func WithLookupFileSize(n int64) MediaOption { return func(m *mediaFile) { m.lookupSize = &n } }

var mediaSeq atomic.Int64

// AddMedia holds data as a media file of mimeType, as if a customer had sent it, and returns its
// description: the id and base64 sha256 a webhook names it by.
func (f *Fake) AddMedia(data []byte, mimeType string, opts ...MediaOption) MediaFile {
	sum := sha256.Sum256(data)
	m := &mediaFile{data: append([]byte(nil), data...)}
	m.MediaFile = MediaFile{
		ID: strconv.FormatInt(1_000_000_000_000_000+mediaSeq.Add(1), 10), MIMEType: mimeType,
		SHA256: base64.StdEncoding.EncodeToString(sum[:]), SHA256Hex: hex.EncodeToString(sum[:]), FileSize: int64(len(data)),
	}
	for _, o := range opts {
		o(m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.media == nil {
		f.media = map[string]*mediaFile{}
	}
	f.media[m.ID] = m
	return m.MediaFile
}

// ExpireMedia makes the fake forget a media id, as Meta does after 30 days: its lookup answers
// Meta's error for an unknown object (HTTP 400, code 100, subcode 33) and its download 404.
func (f *Fake) ExpireMedia(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m, ok := f.media[id]; ok {
		m.expired = true
	}
}

func (f *Fake) mediaFile(id string) (*mediaFile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.media[id]
	if !ok || m.expired {
		return nil, false
	}
	return m, true
}

var (
	// mediaPath matches a media lookup: /{version}/{media-id} or /{media-id}, ids being digits.
	mediaPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([0-9]+)/?$`)
	// downloadPath is where the fake serves downloads, shaped like Meta's lookaside URLs.
	downloadPath = "/whatsapp_business/attachments/"
)

// serveMedia answers a media lookup or download when r is one, and reports whether it was.
func (f *Fake) serveMedia(w http.ResponseWriter, r *http.Request) bool {
	var kind, id string
	if m := mediaPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet {
		kind, id = KindMedia, m[1]
	} else if r.URL.Path == downloadPath && r.Method == http.MethodGet {
		kind, id = KindDownload, r.URL.Query().Get("mid")
	} else {
		return false
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Kind: kind, Time: f.now(), MediaID: id}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rec.Token = tok
	f.answerMedia(w, r, &rec, ok && f.acceptsToken(tok))
	return true
}

// answerMedia records and answers one media call. The call is recorded before its answer is
// written, as every call of the fake is, so a client that has its answer finds it recorded; a
// download's BytesSent and Ended are filled in once the bytes are written.
func (f *Fake) answerMedia(w http.ResponseWriter, r *http.Request, rec *Request, authorized bool) {
	fail := func(fl Failure) {
		fl = fl.withDefaults()
		rec.Status, rec.Ended = fl.HTTPStatus, true
		f.record(*rec)
		if fl.RetryAfter != "" {
			w.Header().Set("Retry-After", fl.RetryAfter)
		}
		writeJSON(w, fl.HTTPStatus, metaError(fl))
	}
	if !authorized {
		fail(Failure{HTTPStatus: http.StatusUnauthorized, Code: 190})
		return
	}
	if fl, ok := f.nextFailure(rec.Kind); ok {
		fail(fl)
		return
	}
	m, ok := f.mediaFile(rec.MediaID)
	if rec.Kind == KindDownload {
		if !ok {
			// Meta's CDN answers an expired or unknown download with a bare 404.
			rec.Status, rec.Ended = http.StatusNotFound, true
			f.record(*rec)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		f.download(w, m, rec)
		return
	}
	if !ok {
		fail(Failure{Code: 100, Subcode: 33, Type: "GraphMethodException",
			Message: "Unsupported get request. Object with ID '" + rec.MediaID + "' does not exist, cannot be loaded due to missing permissions, or does not support this operation."})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	size := m.FileSize
	if m.lookupSize != nil {
		size = *m.lookupSize
	}
	rec.Status, rec.Ended = http.StatusOK, true
	f.record(*rec)
	writeJSON(w, http.StatusOK, map[string]any{
		"messaging_product": "whatsapp",
		"url":               scheme + "://" + r.Host + downloadPath + "?mid=" + m.ID + "&ext=" + strconv.FormatInt(f.now().Unix(), 10),
		"mime_type":         m.MIMEType,
		"sha256":            m.SHA256Hex,
		"file_size":         size,
		"id":                m.ID,
	})
}

// download writes m's bytes, then notes how many went out in its record.
func (f *Fake) download(w http.ResponseWriter, m *mediaFile, rec *Request) {
	rec.Status = http.StatusOK
	idx := f.record(*rec)
	var sent int64
	defer func() { f.ended(idx, sent) }()
	w.Header().Set("Content-Type", m.MIMEType)
	if !m.noLength {
		w.Header().Set("Content-Length", strconv.FormatInt(m.FileSize, 10))
	}
	w.WriteHeader(http.StatusOK)
	// In pieces, so that a client that stops reading stops the download.
	const piece = 32 << 10
	for off := 0; off < len(m.data); off += piece {
		n, err := w.Write(m.data[off:min(off+piece, len(m.data))])
		sent += int64(n)
		if err != nil {
			break
		}
		if fl, ok := w.(http.Flusher); ok && m.noLength {
			fl.Flush()
		}
	}
}

// ended completes the record at idx of a download that wrote sent bytes.
func (f *Fake) ended(idx int, sent int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if idx < len(f.requests) { // Reset may have dropped it
		f.requests[idx].BytesSent, f.requests[idx].Ended = sent, true
	}
	f.notifyLocked()
}

// WaitForRequest blocks until a recorded request satisfies match and returns the first that
// does, or returns ctx's error.
func (f *Fake) WaitForRequest(ctx context.Context, match func(Request) bool) (Request, error) {
	var found Request
	_, err := f.wait(ctx, func() []Request {
		for _, r := range f.requests {
			if match(r) {
				found = r
				return []Request{r}
			}
		}
		return nil
	}, f.Requests)
	return found, err
}

// serveMediaAdmin serves POST /_fake/media (the body is the file, its Content-Type the type)
// and POST /_fake/media/expire {"id":"…"}.
func (f *Fake) serveMediaAdmin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "POST only"})
		return
	}
	if r.URL.Path == "/_fake/media/expire" {
		var in struct {
			ID string `json:"id"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || in.ID == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": `want {"id":"…"}`})
			return
		}
		f.ExpireMedia(in.ID)
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
		return
	}
	mimeType := r.Header.Get("Content-Type")
	data, err := io.ReadAll(io.LimitReader(r.Body, maxAdminMedia+1))
	if err != nil || len(data) == 0 || len(data) > maxAdminMedia || mimeType == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "want the file as the body (1 byte to 64 MiB) and its type as Content-Type"})
		return
	}
	writeJSON(w, http.StatusCreated, f.AddMedia(data, mimeType))
}
