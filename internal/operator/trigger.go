package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/keyedid"
	"github.com/wapipe/wapipe/internal/whatsapp"
	"github.com/wapipe/wapipe/tasks"
)

// Sample types Build knows.
var SampleTypes = []string{"text", "button", "list", "image", "audio", "video", "document", "location", "contacts", "reaction", "status", "batch",
	"revoke", "edit", "order", "system", "user_changed_user_id", "call_permission", "unsupported", "preferences", "echo", "account_update",
	"calls", "template_status"}

// Statuses a status sample can carry.
var SampleStatuses = []string{"sent", "delivered", "read", "failed"}

// SampleSpec describes a webhook delivery to build.
type SampleSpec struct {
	// Type is one of SampleTypes.
	Type string
	// Status is the status of a status sample (one of SampleStatuses).
	Status string
	// From is the customer's phone number; the sample default when empty.
	From string
	// UserID is the customer's business-scoped user id (BSUID), sent beside the phone; none when
	// empty. Username is their WhatsApp username, Name their profile name (the sample's when
	// empty). NoPhone leaves the phone out: a user with a username known by UserID alone.
	UserID, Username, Name string
	NoPhone                bool
	// Text is the text of a text message, the caption of an image, the title of a button or
	// list reply.
	Text string
	// MessageID is the inbound message's id (fresh when empty); for a status, the outbound
	// message the status is about (required); for a reaction, the message reacted to.
	MessageID string
	// CallbackData is a status's biz_opaque_callback_data.
	CallbackData string
	// Count is the number of messages of a batch.
	Count int
	// ToNumber is the business number's phone_number_id the payload names (value.metadata), which
	// picks the tenant; the sample default (the sample tenant's) when empty.
	ToNumber string
	// Media is the file an image, audio, video or document message names (see UploadMedia);
	// nil names a made-up media id, which only an ack-mode tenant can answer.
	Media *whatsapp.SampleMediaFile
}

// Delivery is a built webhook body and the ids it carries.
type Delivery struct {
	Body []byte
	// EventID is the inbound_event_id the webhook derives from Body.
	EventID string
	// MessageIDs are the ids of the inbound messages in Body, in order.
	MessageIDs []string
	// StatusIDs are the "<id>:<status>" keys of the statuses in Body.
	StatusIDs []string
}

// IdempotencyKeys returns the outbound idempotency key of each message, keyed with k.
func (d Delivery) IdempotencyKeys(k *keyedid.Keyer) []string {
	out := make([]string, len(d.MessageIDs))
	for i, id := range d.MessageIDs {
		out[i] = tasks.IdempotencyKey(k, id)
	}
	return out
}

// BuildDelivery builds a body shaped exactly like Meta's.
func BuildDelivery(s SampleSpec) (Delivery, error) {
	if s.ToNumber != "" && strings.Trim(s.ToNumber, "0123456789") != "" {
		return Delivery{}, fmt.Errorf("--to-number %q: a phone_number_id is digits only (see wapipe tenants show ID)", s.ToNumber)
	}
	if s.NoPhone && s.UserID == "" {
		return Delivery{}, fmt.Errorf("--no-phone needs --user-id: a message names its sender by a phone or a business-scoped user id")
	}
	if s.UserID != "" && !contact.ValidUserID(s.UserID) {
		return Delivery{}, fmt.Errorf("--user-id %q: a business-scoped user id is CC. then letters or digits (US.13491208655302741918)", s.UserID)
	}
	o := whatsapp.SampleOptions{From: s.From, PhoneNumberID: s.ToNumber, UserID: s.UserID, Username: s.Username, ContactName: s.Name,
		NoPhone: s.NoPhone}
	var body []byte
	switch s.Type {
	case "text":
		o.MessageID = s.MessageID
		body = whatsapp.SampleText(o, or(s.Text, "Hello from wapipe trigger"))
	case "button":
		o.MessageID = s.MessageID
		body = whatsapp.SampleButtonReply(o, "btn-yes", or(s.Text, "Yes"))
	case "list":
		o.MessageID = s.MessageID
		body = whatsapp.SampleListReply(o, "row-1", or(s.Text, "First option"), "Chosen from the list")
	case "image", "audio", "video", "document":
		o.MessageID = s.MessageID
		f := whatsapp.SampleMediaFile{ID: "1234567890123456", MIMEType: sampleMIME[s.Type], SHA256: "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="}
		if s.Media != nil {
			f = *s.Media
		}
		f.Caption = s.Text
		if s.Type == "document" && f.Filename == "" {
			f.Filename = "document.pdf"
		}
		body = whatsapp.SampleMedia(o, s.Type, f)
	case "contacts":
		o.MessageID = s.MessageID
		body = whatsapp.SampleContacts(o, or(s.Text, "Budi Santoso"), "+62 812-0000-0000")
	case "location":
		o.MessageID = s.MessageID
		body = whatsapp.SampleLocation(o, 37.4839, -122.1475, "Meta HQ", "1 Hacker Way, Menlo Park, CA")
	case "reaction":
		target := s.MessageID
		if target == "" {
			target = whatsapp.NewMessageID()
		}
		body = whatsapp.SampleReaction(o, target, or(s.Text, "\U0001F44D"))
	case "status":
		if s.MessageID == "" {
			return Delivery{}, fmt.Errorf("a status needs --message-id: the id of the outbound message it is about")
		}
		o.MessageID, o.BizOpaqueCallbackData = s.MessageID, s.CallbackData
		switch s.Status {
		case "sent", "delivered", "read":
			body = whatsapp.SampleStatus(o, s.Status)
		case "failed":
			body = whatsapp.SampleFailedStatus(o, 131026, "Message undeliverable", "Unable to deliver message.")
		default:
			return Delivery{}, fmt.Errorf("status %q: want one of %s", s.Status, strings.Join(SampleStatuses, ", "))
		}
	case "revoke", "edit", "order", "system", "user_changed_user_id", "call_permission", "unsupported", "preferences", "echo", "account_update",
		"calls", "template_status":
		b, err := otherEvent(o, s)
		if err != nil {
			return Delivery{}, err
		}
		body = b
	case "batch":
		if s.Count < 1 || s.Count > 1000 {
			return Delivery{}, fmt.Errorf("batch count %d: want 1 to 1000", s.Count)
		}
		body = whatsapp.SampleBatch(o, s.Count)
	default:
		return Delivery{}, fmt.Errorf("type %q: want one of %s", s.Type, strings.Join(SampleTypes, ", "))
	}
	return Describe(body)
}

// otherEvent builds the samples of Meta's other events (whatsapp/sample_events.go). For revoke and
// edit, MessageID is the message deleted or changed (required); Text is an edit's new text, a
// system notice's new number, a preference (stop, resume), an account event, a call permission
// answer (accept, reject), an echo's text or a template's category; for user_changed_user_id, the
// new BSUID.
func otherEvent(o whatsapp.SampleOptions, s SampleSpec) ([]byte, error) {
	switch s.Type {
	case "revoke", "edit":
		if s.MessageID == "" {
			return nil, fmt.Errorf("a %s needs --message-id: the id of the message the contact %s", s.Type, map[string]string{"revoke": "deleted", "edit": "changed"}[s.Type])
		}
		if s.Type == "revoke" {
			return whatsapp.SampleRevoke(o, s.MessageID), nil
		}
		return whatsapp.SampleEdit(o, s.MessageID, or(s.Text, "Bus 02 on 2 March, not bus 01")), nil
	case "order":
		o.MessageID = s.MessageID
		return whatsapp.SampleOrder(o, "194836987003835", or(s.Text, "Please deliver after 5pm"), []whatsapp.ProductItem{
			{ProductRetailerID: "burger", Quantity: "3", ItemPrice: "25000", Currency: "IDR"},
			{ProductRetailerID: "fries", Quantity: "2", ItemPrice: "12000", Currency: "IDR"}}), nil
	case "system":
		newNo := or(s.Text, "16505559999")
		if strings.Trim(newNo, "0123456789") != "" {
			return nil, fmt.Errorf("--text %q: a system notice's new number is digits only", newNo)
		}
		o.MessageID = s.MessageID
		newUser := ""
		if s.UserID != "" {
			// The new number comes with a new BSUID, as Meta regenerates it.
			newUser = s.UserID + "2"
		}
		return whatsapp.SampleUserChangedNumber(o, newNo, newUser), nil
	case "user_changed_user_id":
		if s.UserID == "" {
			return nil, fmt.Errorf("a user_changed_user_id needs --user-id: the business-scoped user id that changed")
		}
		newUser := or(s.Text, s.UserID+"1")
		if !contact.ValidUserID(newUser) {
			return nil, fmt.Errorf("--text %q: the new business-scoped user id is CC. then letters or digits", newUser)
		}
		o.MessageID = s.MessageID
		return whatsapp.SampleUserChangedUserID(o, newUser), nil
	case "call_permission":
		o.MessageID = s.MessageID
		return whatsapp.SampleCallPermissionReply(o, or(s.Text, "accept")), nil
	case "unsupported":
		o.MessageID = s.MessageID
		return whatsapp.SampleUnsupported(o), nil
	case "preferences":
		v := or(s.Text, "stop")
		if v != "stop" && v != "resume" && v != "signup" {
			return nil, fmt.Errorf("--text %q: a preference is stop, resume or signup", v)
		}
		return whatsapp.SamplePreference(o, v), nil
	case "echo":
		o.MessageID = s.MessageID
		return whatsapp.SampleEcho(o, or(s.Text, "We open at 9 tomorrow")), nil
	case "account_update":
		return whatsapp.SampleAccountUpdate(o, or(s.Text, "ACCOUNT_RESTRICTION")), nil
	case "calls":
		return whatsapp.SampleCall(o), nil
	default: // template_status
		return whatsapp.SampleTemplateStatus(o, "spring_sale", "APPROVED", or(s.Text, "MARKETING")), nil
	}
}

// sampleMIME is the type a media sample without a file names.
var sampleMIME = map[string]string{"image": "image/jpeg", "audio": "audio/ogg; codecs=opus", "video": "video/mp4", "document": "application/pdf"}

// UploadMedia gives data to the fake Graph API at graphURL (POST /_fake/media on its host), as if
// a customer had sent it, and returns how a webhook names it. Only the fake has this route: with
// a real Graph API the media a webhook names come from WhatsApp users.
func UploadMedia(ctx context.Context, hc *http.Client, graphURL string, data []byte, mimeType string) (whatsapp.SampleMediaFile, error) {
	u, err := url.Parse(graphURL)
	if err != nil || u.Host == "" {
		return whatsapp.SampleMediaFile{}, fmt.Errorf("graph URL %q is not an absolute URL", graphURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.Scheme+"://"+u.Host+"/_fake/media", bytes.NewReader(data))
	if err != nil {
		return whatsapp.SampleMediaFile{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", mimeType)
	resp, err := hc.Do(req)
	if err != nil {
		return whatsapp.SampleMediaFile{}, fmt.Errorf("upload to the fake Graph API: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		ID       string `json:"id"`
		MIMEType string `json:"mime_type"`
		SHA256   string `json:"sha256"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.ID == "" {
		return whatsapp.SampleMediaFile{}, fmt.Errorf("upload to the fake Graph API at %s: HTTP %d (is devstack running?)", u.Host, resp.StatusCode)
	}
	return whatsapp.SampleMediaFile{ID: out.ID, MIMEType: out.MIMEType, SHA256: out.SHA256}, nil
}

// Describe parses a webhook body and returns the ids the pipeline will know it by.
func Describe(body []byte) (Delivery, error) {
	p, err := whatsapp.Parse(body)
	if err != nil {
		return Delivery{}, fmt.Errorf("whatsapp.Parse: %w", err)
	}
	eventID, err := whatsapp.InboundEventID(body, p)
	if err != nil {
		return Delivery{}, fmt.Errorf("whatsapp.InboundEventID: %w", err)
	}
	d := Delivery{Body: body, EventID: eventID}
	msgs, statuses := whatsapp.Normalize(p)
	for _, m := range msgs {
		d.MessageIDs = append(d.MessageIDs, m.ID)
	}
	for _, st := range statuses {
		d.StatusIDs = append(d.StatusIDs, st.ID+":"+st.Status)
	}
	return d, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// PostResult is the webhook's answer to one delivery.
type PostResult struct {
	StatusCode    int
	Body          string
	CorrelationID string
	Elapsed       time.Duration
}

// Post signs body with secret (X-Hub-Signature-256) and posts it to the webhook url, as Meta does.
func Post(ctx context.Context, client *http.Client, url, secret string, body []byte) (PostResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return PostResult{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "facebookexternalua")
	req.Header.Set("X-Hub-Signature-256", whatsapp.Sign(body, secret))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return PostResult{}, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return PostResult{}, fmt.Errorf("read the webhook's answer: %w", err)
	}
	return PostResult{
		StatusCode:    resp.StatusCode,
		Body:          strings.TrimSpace(string(b)),
		CorrelationID: resp.Header.Get(tasks.HeaderCorrelationID),
		Elapsed:       time.Since(start),
	}, nil
}
