package graphfake

import (
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/wapipe/wapipe/internal/graph"
)

// KindUpload is the request kind of a media upload, POST /{version}/{phone_number_id}/media.
const KindUpload = "upload"

// uploadPath matches /{version}/{phone_number_id}/media and /{phone_number_id}/media.
var uploadPath = regexp.MustCompile(`^(?:/v[0-9]+(?:\.[0-9]+)?)?/([0-9]+)/media/?$`)

// serveUpload answers a media upload when r is one, and reports whether it was. As Meta does, it
// takes a multipart form with messaging_product=whatsapp, type (the MIME type) and file, and
// answers {"id"}; the file is then held like a customer's (AddMedia), so its id works in a media
// lookup and download, and a test can compare its bytes (MediaData). The request's Body records
// the form's fields (messaging_product, type, filename, file_type: the file part's
// Content-Type) and BytesSent the file's size.
func (f *Fake) serveUpload(w http.ResponseWriter, r *http.Request) bool {
	m := uploadPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost {
		return false
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Kind: KindUpload, Time: f.now(), PhoneNumberID: m[1], Ended: true}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	rec.Token = tok
	fail := func(fl Failure) {
		fl = fl.withDefaults()
		rec.Status = fl.HTTPStatus
		f.record(rec)
		writeJSON(w, fl.HTTPStatus, metaError(fl))
	}
	if !ok || !f.acceptsToken(tok) {
		fail(Failure{HTTPStatus: http.StatusUnauthorized, Code: 190})
		return true
	}
	fields, data, problem := readUploadForm(r)
	rec.Body = fields
	rec.BytesSent = int64(len(data))
	if problem != "" {
		fail(Failure{Code: 100, Type: "OAuthException", Message: "(#100) " + problem})
		return true
	}
	// A scripted failure answers a whole form only: an upload its client broke off (whose
	// handler may run late) never takes the failure meant for the next one.
	if fl, ok := f.nextFailure(KindUpload); ok {
		fail(fl)
		return true
	}
	if _, _, ok := graph.UploadTypeOf(fields["type"].(string)); !ok {
		fail(Failure{Code: 131053, Type: "OAuthException", Message: "(#131053) Media upload error",
			Details: "Unsupported file type"})
		return true
	}
	mf := f.AddMedia(data, fields["type"].(string))
	rec.MediaID, rec.Status = mf.ID, http.StatusOK
	f.record(rec)
	writeJSON(w, http.StatusOK, map[string]any{"id": mf.ID})
	return true
}

// readUploadForm reads Meta's upload form: its fields, and the file's bytes (at most
// maxAdminMedia), or Meta's sentence saying what is wrong with it (which parameter is missing).
func readUploadForm(r *http.Request) (map[string]any, []byte, string) {
	fields := map[string]any{}
	mr, err := r.MultipartReader()
	if err != nil {
		return fields, nil, "The request must be multipart/form-data."
	}
	var data []byte
	file := false
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fields, data, "The request body could not be read."
		}
		switch name := p.FormName(); name {
		case "file":
			file = true
			fields["filename"], fields["file_type"] = p.FileName(), p.Header.Get("Content-Type")
			data, err = io.ReadAll(io.LimitReader(p, maxAdminMedia+1))
			if err != nil || len(data) > maxAdminMedia {
				return fields, data, "The file could not be read or is too large."
			}
		default:
			v, err := io.ReadAll(io.LimitReader(p, 1<<10))
			if err != nil {
				return fields, data, "The request body could not be read."
			}
			fields[name] = string(v)
		}
	}
	for _, name := range []string{"messaging_product", "type"} {
		if v, _ := fields[name].(string); v == "" {
			fields[name] = ""
			return fields, data, "The parameter " + name + " is required."
		}
	}
	switch {
	case fields["messaging_product"] != "whatsapp":
		return fields, data, "Param messaging_product must be one of {WHATSAPP} - got \"" + fields["messaging_product"].(string) + "\"."
	case !file:
		return fields, data, "The parameter file is required."
	}
	return fields, data, ""
}

// MediaData returns the bytes of a held media file (an upload's, or AddMedia's), or false.
func (f *Fake) MediaData(id string) ([]byte, bool) {
	m, ok := f.mediaFile(id)
	if !ok {
		return nil, false
	}
	return m.data, true
}
