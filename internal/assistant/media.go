package assistant

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/internal/llm"
	"github.com/wapipe/wapipe/internal/medialen"
	"github.com/wapipe/wapipe/internal/tenant"
	"github.com/wapipe/wapipe/internal/whatsapp"
)

// Attachment is the file of a media message, fetched after the guardrails: what the model reads
// inline. Its Data is held for the turn only: never stored, never logged.
type Attachment struct {
	// Kind is the message type: image, audio, video or document.
	Kind string
	// MIMEType is the normalised type Gemini takes inline (llm.InlineMIMEType).
	MIMEType string
	Data     []byte
	// SHA256 is the hex SHA-256 of Data, checked against the webhook's.
	SHA256 string
	Size   int64
	// Caption and Filename are the message's, as sent (message content: never logged).
	Caption  string
	Filename string
	// Voice marks an audio recorded as a voice note.
	Voice bool
}

// MediaLoader fetches the file of a media message (image, audio, video or document). The
// worker's is a media.Fetcher bound to the tenant's access token.
//
// Its error is one of the refusals below (wrapped), which the user is told about, or anything
// else, which redoes the turn later (a Graph 5xx, a timeout); an error graph.Classify calls Auth
// (the tenant's token was refused) ends the turn as EventUnavailable with the error as Outcome.Cause.
type MediaLoader interface {
	LoadMedia(ctx context.Context, m whatsapp.Message) (Attachment, error)
}

// The refusals of a MediaLoader. Test with errors.Is.
var (
	// ErrMediaUnsupported: a type the model does not take inline. Reply i18n.MediaUnsupported.
	ErrMediaUnsupported = errors.New("media type not supported")
	// ErrMediaTooLarge: larger than MEDIA_MAX_BYTES. Reply i18n.MediaUnsupported.
	ErrMediaTooLarge = errors.New("media too large")
	// ErrMediaGone: Meta no longer has the file (an expired id, a 404). Reply i18n.MediaResend.
	ErrMediaGone = errors.New("media no longer available")
	// ErrMediaMismatch: the bytes do not match the webhook's sha256. Reply i18n.MediaResend.
	ErrMediaMismatch = errors.New("media does not match its sha256")
	// ErrMediaTooLong: longer (or more pages, or bigger) than the tenant's media limits
	// (assistant.media_limits). Reply i18n.MediaTooLong.
	ErrMediaTooLong = errors.New("media over the tenant's limits")
)

// The event and reasons of a media message that did not reach the model.
const (
	// EventMediaRefused: the file was not read; the user is told why (Reason).
	EventMediaRefused = "media_refused"

	ReasonMediaUnsupported = "media_unsupported" // EventMediaRefused: i18n.MediaUnsupported
	ReasonMediaTooLarge    = "media_too_large"   // EventMediaRefused: i18n.MediaUnsupported
	ReasonMediaGone        = "media_gone"        // EventMediaRefused: i18n.MediaResend
	ReasonMediaMismatch    = "media_mismatch"    // EventMediaRefused: i18n.MediaResend
	ReasonMediaTooLong     = "media_too_long"    // EventMediaRefused: i18n.MediaTooLong
	// ReasonMediaUnavailable: EventMediaRefused on the last attempt after retryable failures:
	// i18n.MediaResend.
	ReasonMediaUnavailable = "media_unavailable"
	// ReasonMediaAuth: EventUnavailable, the tenant's token was refused (Outcome.Cause).
	ReasonMediaAuth = "media_auth"
)

// MediaRefusal is the reason and the reply of a MediaLoader error that is a refusal; ok is false
// for any other error (retry).
func MediaRefusal(err error) (reason string, key i18n.Key, ok bool) {
	switch {
	case errors.Is(err, ErrMediaUnsupported):
		return ReasonMediaUnsupported, i18n.MediaUnsupported, true
	case errors.Is(err, ErrMediaTooLarge):
		return ReasonMediaTooLarge, i18n.MediaUnsupported, true
	case errors.Is(err, ErrMediaGone):
		return ReasonMediaGone, i18n.MediaResend, true
	case errors.Is(err, ErrMediaMismatch):
		return ReasonMediaMismatch, i18n.MediaResend, true
	case errors.Is(err, ErrMediaTooLong):
		return ReasonMediaTooLong, i18n.MediaTooLong, true
	}
	return "", "", false
}

// overLimits reports whether a file of type mt is over limits l, and what is over: the length
// of a voice note or video, the pages of a PDF, the size of an image. A length that cannot be
// read is not over (the size cap, MEDIA_MAX_BYTES, still bounds it).
func overLimits(l tenant.MediaLimits, mt string, data []byte) (string, bool) {
	switch kind, _, _ := strings.Cut(mt, "/"); {
	case kind == "audio" || kind == "video":
		limit := l.AudioSeconds
		if kind == "video" {
			limit = l.VideoSeconds
		}
		s, ok := medialen.Seconds(mt, data)
		return fmt.Sprintf("%s of %.0f s, over %d s", kind, s, limit), ok && s > float64(limit)
	case mt == "application/pdf":
		n, ok := medialen.PDFPages(data)
		return fmt.Sprintf("pdf of %d pages, over %d", n, l.PDFPages), ok && n > l.PDFPages
	case kind == "image":
		return fmt.Sprintf("image of %d bytes, over %d", len(data), l.ImageBytes), len(data) > l.ImageBytes
	}
	return "", false
}

// isMediaType reports whether a message of type typ carries a file the model may read.
func isMediaType(typ string) bool {
	switch typ {
	case "image", "audio", "video", "document":
		return true
	}
	return false
}

// mediaLabel is what the prompt and the history call a media message.
func mediaLabel(kind string, voice bool) string {
	switch {
	case kind == "audio" && voice:
		return "voice note"
	case kind == "audio":
		return "audio recording"
	case kind == "image":
		return "photo"
	}
	return kind
}

// mediaText is the text beside a file: its caption and its file name, when there are.
func mediaText(m whatsapp.Message) string {
	var parts []string
	if s := strings.TrimSpace(m.Text); s != "" {
		parts = append(parts, s)
	}
	if m.Media != nil && strings.TrimSpace(m.Media.Filename) != "" {
		parts = append(parts, "(file name: "+strings.TrimSpace(m.Media.Filename)+")")
	}
	return strings.Join(parts, "\n")
}

// mediaSummary is the user's turn in the history for a media message: the bytes are not kept, so
// the later turns see what it was and its text.
func mediaSummary(m whatsapp.Message) string {
	voice := m.Media != nil && m.Media.Voice
	s := "[" + mediaLabel(m.Type, voice) + "]"
	if t := mediaText(m); t != "" {
		s += " " + t
	}
	return s
}

// locationText is a shared location as the model reads it.
func locationText(l *whatsapp.Location) string {
	var b strings.Builder
	b.WriteString("[shared location]")
	if s := strings.TrimSpace(l.Name); s != "" {
		fmt.Fprintf(&b, " name: %s;", s)
	}
	if s := strings.TrimSpace(l.Address); s != "" {
		fmt.Fprintf(&b, " address: %s;", s)
	}
	fmt.Fprintf(&b, " latitude: %s; longitude: %s", strconv.FormatFloat(l.Latitude, 'f', -1, 64), strconv.FormatFloat(l.Longitude, 'f', -1, 64))
	return b.String()
}

// contactsText is shared contact cards as the model reads them: names and numbers.
func contactsText(cards []whatsapp.ContactCard) string {
	var b strings.Builder
	b.WriteString("[shared contact]")
	for i, c := range cards {
		if i > 0 {
			b.WriteString(" |")
		}
		name := strings.TrimSpace(c.Name)
		if name == "" {
			name = "(no name)"
		}
		fmt.Fprintf(&b, " name: %s", name)
		if c.Org != "" {
			fmt.Fprintf(&b, "; organisation: %s", c.Org)
		}
		if len(c.Phones) > 0 {
			fmt.Fprintf(&b, "; phone: %s", strings.Join(c.Phones, ", "))
		}
		if len(c.Emails) > 0 {
			fmt.Fprintf(&b, "; e-mail: %s", strings.Join(c.Emails, ", "))
		}
	}
	return b.String()
}

// listReplyText is a chosen list row as the model reads it: its title and its row id (what the
// business's list means by it).
func listReplyText(r *whatsapp.Reply) string {
	s := "[chose from a list] " + strings.TrimSpace(r.Title)
	if d := strings.TrimSpace(r.Description); d != "" {
		s += " — " + d
	}
	return s + " (row id: " + r.ID + ")"
}

// loadMedia fetches the turn's file once the quota gate granted the call. done means the turn
// ended here (a refusal, or the last attempt) with its answer set.
func (e *Engine) loadMedia(ctx context.Context, t *turn) (*llm.Media, bool, error) {
	att, err := t.in.Media.LoadMedia(ctx, t.in.Message)
	if err == nil {
		mt, ok := llm.InlineMIMEType(att.MIMEType)
		if !ok || len(att.Data) == 0 {
			err = fmt.Errorf("%w: %q", ErrMediaUnsupported, att.MIMEType)
		} else if what, over := overLimits(t.in.Tenant.Assistant.MediaLimits.Effective(), mt, att.Data); over {
			err = fmt.Errorf("%w: %s", ErrMediaTooLong, what)
		} else {
			desc := att
			desc.Data = nil // the outcome outlives the turn: it must not hold the bytes
			t.media = &desc
			return &llm.Media{MIMEType: mt, Data: att.Data, Label: mediaLabel(att.Kind, att.Voice)}, false, nil
		}
	}
	if t.dropped != nil {
		// The model never sees this message: it corrects nothing.
		t.state.Pending, t.corrected = t.dropped, false
	}
	if reason, key, ok := MediaRefusal(err); ok {
		t.reason = reason
		t.system(EventMediaRefused, key)
		return nil, true, nil
	}
	switch {
	case errors.Is(err, ErrRetry), ctx.Err() != nil:
	case graph.Classify(err) == graph.Auth:
		t.unavailable(ReasonMediaAuth, err)
		return nil, true, nil
	case t.in.LastAttempt && ctx.Err() == nil:
		t.reason, t.cause = ReasonMediaUnavailable, err
		t.system(EventMediaRefused, i18n.MediaResend)
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("%w: media: %w", ErrRetry, err)
}
