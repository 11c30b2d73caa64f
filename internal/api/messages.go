package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/delivery"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/httpserver"
	"github.com/wapipe/wapipe/internal/logging"
	"github.com/wapipe/wapipe/internal/outbox"
	"github.com/wapipe/wapipe/internal/refusal"
	"github.com/wapipe/wapipe/internal/store"
	"github.com/wapipe/wapipe/internal/templatecheck"
	"github.com/wapipe/wapipe/tasks"
)

// MaxBodyBytes caps a POST /v1/messages body. Most are a few KiB, but Meta takes up to 257
// contact cards in one message and a template text parameter of 32768 characters (up to 128 KiB
// of UTF-8): the cap leaves room for the largest body Meta accepts.
const MaxBodyBytes = 512 << 10

// Meta's limits on the messages the api accepts (Cloud API reference, messages).
const (
	MaxTextBody          = 4096
	MaxInteractiveBody   = 1024
	MaxHeaderFooter      = 60
	MaxButtonTitle       = 20
	MaxButtonID          = 256
	MaxListButtonText    = 20
	MaxRowTitle          = graph.MaxListRowTitle
	MaxRowDescription    = graph.MaxListRowDescription
	MaxRowID             = 200
	MaxSectionTitle      = 24
	MaxTemplateName      = 512
	MaxIdempotencyKeyLen = 255
	MaxCaption           = 1024
	MaxContacts          = 257
	// A template's text parameter: 60 in the header; in the body 32768 when the body is the
	// template's only component, else 1024 (Meta's parameter object).
	MaxHeaderParameter   = 60
	MaxBodyParameter     = 1024
	MaxBodyOnlyParameter = 32768
)

// SendRequest is the body of POST /v1/messages: Meta's send body, with phone_number_id
// optional when the tenant has one number. Type names the one object that is set. The contact is
// To (a phone number) and/or Recipient (a business-scoped user id, or a parent one), as Meta
// takes them: with both, the message goes to To.
type SendRequest struct {
	MessagingProduct string             `json:"messaging_product,omitempty"`
	RecipientType    string             `json:"recipient_type,omitempty"`
	To               string             `json:"to,omitempty"`
	Recipient        string             `json:"recipient,omitempty"`
	PhoneNumberID    string             `json:"phone_number_id,omitempty"`
	Type             string             `json:"type"`
	Context          *graph.Context     `json:"context,omitempty"`
	Text             *graph.Text        `json:"text,omitempty"`
	Template         *graph.Template    `json:"template,omitempty"`
	Interactive      *graph.Interactive `json:"interactive,omitempty"`
	Image            *graph.Media       `json:"image,omitempty"`
	Audio            *graph.Media       `json:"audio,omitempty"`
	Video            *graph.Media       `json:"video,omitempty"`
	Document         *graph.Media       `json:"document,omitempty"`
	Sticker          *graph.Media       `json:"sticker,omitempty"`
	Location         *graph.Location    `json:"location,omitempty"`
	Contacts         []graph.Contact    `json:"contacts,omitempty"`
	Reaction         *graph.Reaction    `json:"reaction,omitempty"`
}

// Message is the Graph message the request sends (without recipient and callback data): every
// field the business gave, so that Graph gets Meta's body field for field.
func (r SendRequest) Message() graph.Message {
	return graph.Message{
		Type: r.Type, RecipientType: r.RecipientType, Context: r.Context,
		Text: r.Text, Template: r.Template, Interactive: r.Interactive,
		Image: r.Image, Audio: r.Audio, Video: r.Video, Document: r.Document, Sticker: r.Sticker,
		Location: r.Location, Contacts: r.Contacts, Reaction: r.Reaction,
	}
}

var (
	waIDPattern     = regexp.MustCompile(`^[1-9][0-9]{7,14}$`)
	templatePattern = regexp.MustCompile(`^[a-z0-9_]+$`)
	messageIDRe     = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)
)

// sendTypes are the message types the api sends, as the sentence a refusal names them in.
const sendTypes = `"text", "template", "interactive", "image", "audio", "video", "document", "sticker", "location", "contacts" or "reaction"`

// objects says, for each message type, whether the request carries its object.
func (r SendRequest) objects() map[string]bool {
	return map[string]bool{
		"text": r.Text != nil, "template": r.Template != nil, "interactive": r.Interactive != nil,
		"image": r.Image != nil, "audio": r.Audio != nil, "video": r.Video != nil, "document": r.Document != nil,
		"sticker": r.Sticker != nil, "location": r.Location != nil, "contacts": r.Contacts != nil, "reaction": r.Reaction != nil,
	}
}

// Validate returns the request's first problem, one clear sentence naming the field, or nil.
func (r SendRequest) Validate() error {
	switch {
	case r.MessagingProduct != "" && r.MessagingProduct != "whatsapp":
		return errors.New(`messaging_product: must be "whatsapp" when given`)
	case r.RecipientType != "" && r.RecipientType != "individual":
		return errors.New(`recipient_type: must be "individual" when given`)
	case r.To == "" && r.Recipient == "":
		return errors.New("to or recipient: required (the contact's phone number, or their business-scoped user id)")
	case r.To != "" && !waIDPattern.MatchString(r.To):
		return errors.New("to: must be a phone number, 8 to 15 digits with the country code, no + or spaces (a business-scoped user id goes in recipient)")
	case r.Recipient != "" && !contact.ValidUserID(r.Recipient) && !contact.ValidParentUserID(r.Recipient):
		return errors.New(`recipient: must be a business-scoped user id ("CC." then 1 to 128 letters or digits, e.g. US.13491208655302741918) or a parent one ("CC.ENT.…"), exactly as the webhook gave it`)
	case r.Type == "":
		return errors.New("type: required (" + sendTypes + ")")
	case r.Context != nil && strings.TrimSpace(r.Context.MessageID) == "":
		return errors.New("context.message_id: required with context (the id of the message to quote)")
	}
	objects := r.objects()
	if _, ok := objects[r.Type]; !ok {
		return fmt.Errorf("type: %q is not supported (%s)", r.Type, sendTypes)
	}
	if !objects[r.Type] {
		return fmt.Errorf("%s: required when type is %s", r.Type, r.Type)
	}
	for _, name := range slices.Sorted(maps.Keys(objects)) {
		if objects[name] && name != r.Type {
			return fmt.Errorf("%s: not allowed when type is %s", name, r.Type)
		}
	}
	switch r.Type {
	case "text":
		return validateText(r.Text)
	case "template":
		return validateTemplate(r.Template)
	case "interactive":
		return validateInteractive(r.Interactive)
	case "image":
		return validateMedia("image", r.Image)
	case "audio":
		return validateMedia("audio", r.Audio)
	case "video":
		return validateMedia("video", r.Video)
	case "document":
		return validateMedia("document", r.Document)
	case "sticker":
		return validateMedia("sticker", r.Sticker)
	case "location":
		return validateLocation("location", r.Location)
	case "contacts":
		return validateContacts(r.Contacts)
	default:
		return validateReaction(r.Reaction)
	}
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func validateText(t *graph.Text) error {
	switch {
	case strings.TrimSpace(t.Body) == "":
		return errors.New("text.body: required")
	case runes(t.Body) > MaxTextBody:
		return fmt.Errorf("text.body: at most %d characters, got %d", MaxTextBody, runes(t.Body))
	}
	return nil
}

func validateTemplate(t *graph.Template) error {
	switch {
	case t.Name == "":
		return errors.New("template.name: required")
	case len(t.Name) > MaxTemplateName || !templatePattern.MatchString(t.Name):
		return errors.New("template.name: lowercase letters, digits and underscores, at most 512")
	case t.Language.Code == "":
		return errors.New("template.language.code: required (e.g. en_US)")
	case t.Language.Policy != "" && t.Language.Policy != "deterministic":
		return errors.New(`template.language.policy: "deterministic" when given`)
	}
	return validateComponents(t.Components)
}

func validateInteractive(it *graph.Interactive) error {
	if it.Body == nil || strings.TrimSpace(it.Body.Text) == "" {
		return errors.New("interactive.body.text: required")
	}
	if runes(it.Body.Text) > MaxInteractiveBody {
		return fmt.Errorf("interactive.body.text: at most %d characters", MaxInteractiveBody)
	}
	if it.Header != nil && (it.Header.Type != "text" || runes(it.Header.Text) > MaxHeaderFooter || it.Header.Text == "") {
		return fmt.Errorf("interactive.header: a text header of 1 to %d characters", MaxHeaderFooter)
	}
	if it.Footer != nil && (runes(it.Footer.Text) > MaxHeaderFooter || it.Footer.Text == "") {
		return fmt.Errorf("interactive.footer.text: 1 to %d characters", MaxHeaderFooter)
	}
	switch it.Type {
	case "button":
		return validateButtons(it.Action)
	case "list":
		return validateList(it.Action)
	case "request_contact_info":
		// WhatsApp owns the button (it shares the user's contact card, their phone with it):
		// the action only names it.
		if it.Header != nil || it.Footer != nil || len(it.Action.Buttons) > 0 || len(it.Action.Sections) > 0 || it.Action.Button != "" ||
			it.Action.Name != "request_contact_info" {
			return errors.New(`interactive.action: a request_contact_info message takes a body and action {"name":"request_contact_info"} only`)
		}
		return nil
	default:
		return errors.New(`interactive.type: "button", "list" or "request_contact_info"`)
	}
}

func validateButtons(a graph.Action) error {
	if len(a.Sections) > 0 || a.Button != "" {
		return errors.New("interactive.action: reply buttons take buttons only")
	}
	if len(a.Buttons) == 0 || len(a.Buttons) > graph.MaxReplyButtons {
		return fmt.Errorf("interactive.action.buttons: 1 to %d reply buttons, got %d", graph.MaxReplyButtons, len(a.Buttons))
	}
	ids := map[string]bool{}
	for i, b := range a.Buttons {
		switch {
		case b.Type != "reply":
			return fmt.Errorf(`interactive.action.buttons[%d].type: must be "reply"`, i)
		case b.Reply.ID == "" || len(b.Reply.ID) > MaxButtonID:
			return fmt.Errorf("interactive.action.buttons[%d].reply.id: 1 to %d characters", i, MaxButtonID)
		case ids[b.Reply.ID]:
			return fmt.Errorf("interactive.action.buttons[%d].reply.id: ids must be unique", i)
		case b.Reply.Title == "" || runes(b.Reply.Title) > MaxButtonTitle:
			return fmt.Errorf("interactive.action.buttons[%d].reply.title: 1 to %d characters", i, MaxButtonTitle)
		}
		ids[b.Reply.ID] = true
	}
	return nil
}

func validateList(a graph.Action) error {
	switch {
	case len(a.Buttons) > 0:
		return errors.New("interactive.action: a list takes a button text and sections, not buttons")
	case a.Button == "" || runes(a.Button) > MaxListButtonText:
		return fmt.Errorf("interactive.action.button: 1 to %d characters", MaxListButtonText)
	case len(a.Sections) == 0 || len(a.Sections) > graph.MaxListSections:
		return fmt.Errorf("interactive.action.sections: 1 to %d sections", graph.MaxListSections)
	}
	rows := 0
	ids := map[string]bool{}
	for i, sec := range a.Sections {
		if runes(sec.Title) > MaxSectionTitle || (len(a.Sections) > 1 && sec.Title == "") {
			return fmt.Errorf("interactive.action.sections[%d].title: at most %d characters, required with several sections", i, MaxSectionTitle)
		}
		if len(sec.Rows) == 0 {
			return fmt.Errorf("interactive.action.sections[%d].rows: at least one row", i)
		}
		for j, row := range sec.Rows {
			rows++
			switch {
			case row.ID == "" || len(row.ID) > MaxRowID:
				return fmt.Errorf("interactive.action.sections[%d].rows[%d].id: 1 to %d characters", i, j, MaxRowID)
			case ids[row.ID]:
				return fmt.Errorf("interactive.action.sections[%d].rows[%d].id: ids must be unique", i, j)
			case row.Title == "" || runes(row.Title) > MaxRowTitle:
				return fmt.Errorf("interactive.action.sections[%d].rows[%d].title: 1 to %d characters", i, j, MaxRowTitle)
			case runes(row.Description) > MaxRowDescription:
				return fmt.Errorf("interactive.action.sections[%d].rows[%d].description: at most %d characters", i, j, MaxRowDescription)
			}
			ids[row.ID] = true
		}
	}
	if rows > graph.MaxListRows {
		return fmt.Errorf("interactive.action.sections: at most %d rows in all, got %d", graph.MaxListRows, rows)
	}
	return nil
}

// decodeRequest reads one JSON object under the size cap, refusing unknown fields.
func decodeRequest(w http.ResponseWriter, r *http.Request) (SendRequest, error) {
	var req SendRequest
	err := decodeJSON(w, r, &req, "message")
	return req, err
}

// decodeJSON reads one JSON object (a what) into v under the size cap, refusing unknown fields.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, what string) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return refusal.New(codeWrongContentType, "Content-Type: must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return refusal.New(codeBodyTooLarge, fmt.Sprintf("body: at most %d bytes", MaxBodyBytes))
	}
	if errors.Is(err, httpserver.ErrBodyTimeout) {
		return refusal.New(codeBodyTimeout, "body: did not arrive in time")
	}
	if err != nil {
		return refusal.New(refusal.InvalidRequest, "body: could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refusal.New(refusal.InvalidRequest, fmt.Sprintf("body: not a valid %s object (%s)", what, jsonProblem(err)))
	}
	if dec.More() {
		return refusal.New(refusal.InvalidRequest, "body: one JSON object only")
	}
	return nil
}

// jsonKind names what a Go type takes in JSON, as a sender reads it.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return t.String()
}

// jsonProblem says what is wrong with a body without quoting it.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("%s: wrong type, want %s", te.Field, jsonKind(te.Type))
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	default:
		return "malformed JSON"
	}
}

// handleSend answers POST /v1/messages.
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.caller(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	idem := r.Header.Get("Idempotency-Key")
	if len(idem) > MaxIdempotencyKeyLen || strings.ContainsFunc(idem, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		fail(w, r, refusal.New(refusal.InvalidRequest, fmt.Sprintf("Idempotency-Key: 1 to %d printable ASCII characters", MaxIdempotencyKeyLen)))
		return
	}
	req, err := decodeRequest(w, r)
	if err == nil {
		if err = req.Validate(); err != nil {
			err = refusal.New(refusal.InvalidRequest, err.Error())
		}
	}
	if ref, ok := refusal.As(err); ok {
		logger.InfoContext(ctx, "send refused: invalid request", "event", "api_invalid_request", "problem", ref.Message)
		fail(w, r, ref)
		return
	}
	if optedOut, err := s.optedOut(ctx, tenantID, req); err != nil {
		fail(w, r, err)
		return
	} else if optedOut {
		logger.InfoContext(ctx, "send refused: the contact stopped marketing messages", "event", "api_send_refused", "code", refusal.ContactOptedOut)
		fail(w, r, refusal.New(refusal.ContactOptedOut, "the contact stopped marketing messages from this business: a MARKETING template is not sent (Meta would refuse it with 131050)"))
		return
	}
	if err := (templatecheck.Checker{Templates: s.deps.Templates, Tenants: s.deps.Settings}).Check(ctx, tenantID, req.PhoneNumberID, req.To, req.Message()); err != nil {
		if ref, ok := refusal.As(err); ok {
			logger.InfoContext(ctx, "send refused: the template may not be sent", "event", "api_send_refused", "code", ref.Code)
		}
		fail(w, r, err)
		return
	}
	res, err := s.outbox.Send(ctx, outbox.Request{
		TenantID: tenantID, PhoneNumberID: req.PhoneNumberID, To: req.To, Recipient: req.Recipient, Message: req.Message(),
		IdempotencyKey: idem, Source: store.SourceAPI, CorrelationID: httpserver.CorrelationID(ctx),
	})
	if err != nil {
		if ref, ok := refusal.As(err); ok {
			logger.InfoContext(ctx, "send refused", "event", "api_send_refused", "code", ref.Code)
		}
		fail(w, r, err)
		return
	}
	logger.InfoContext(ctx, "message accepted", "event", "api_message_accepted", "api_message_id", res.ID, "message_type", req.Type,
		"phone_number_id", res.PhoneNumberID, logging.Phone("to", req.To), logging.User("recipient", req.Recipient), "replay", res.Replay)
	writeJSON(w, http.StatusAccepted, map[string]string{"id": res.ID, "status": PublicStatus(res.Record)})
}

// optedOut reports whether req is a template wapipe knows to be MARKETING, to a contact who
// stopped marketing messages (field user_preferences). The category comes from the template
// webhooks (message_template_status_update, template_category_update); a template wapipe has no
// category for is sent, and Meta decides.
func (s *Server) optedOut(ctx context.Context, tenantID string, req SendRequest) (bool, error) {
	if req.Type != "template" || req.Template == nil || s.deps.OptOuts == nil || s.deps.Contacts == nil {
		return false, nil
	}
	// The contact the message goes to: the phone's when to is given (to wins), else the
	// recipient's (outbox.Lookups).
	for _, id := range outbox.Lookups(req.To, req.Recipient) {
		c, ok, err := s.deps.Contacts.Find(ctx, tenantID, id)
		if err != nil {
			return false, err
		}
		if ok {
			return s.deps.OptOuts.OptedOutOfMarketing(ctx, tenantID, c, req.Template.Name, req.Template.Language.Code)
		}
	}
	// A contact wapipe never met has stopped nothing here.
	return false, nil
}

// MessageState is the answer of GET /v1/messages/{id}.
type MessageState struct {
	ID             string        `json:"id"`
	Status         string        `json:"status"`
	GraphMessageID string        `json:"graph_message_id"`
	Error          *MessageError `json:"error"`
}

// MessageError is why a message failed: Meta's code when Meta gave one, and a reason.
type MessageError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// errNoSuchMessage answers an id that is not one of the tenant's messages, whether it exists
// for another tenant or not at all.
var errNoSuchMessage = refusal.New(refusal.NotFound, "no such message")

// handleGet answers GET /v1/messages/{id}.
func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.caller(w, r)
	if !ok {
		return
	}
	id := chi.URLParam(r, "id")
	rec, err := store.OutboundRecord{}, error(errNoSuchMessage)
	if messageIDRe.MatchString(id) {
		rec, err = s.deps.Sends.GetSend(r.Context(), tasks.SendKey(id))
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.TenantID != tenantID) {
		err = errNoSuchMessage
	}
	if err != nil {
		fail(w, r, err)
		return
	}
	st := MessageState{ID: id, Status: PublicStatus(rec), GraphMessageID: rec.GraphMessageID}
	if st.Status == "failed" {
		st.Error = &MessageError{Code: rec.LastErrorCode, Message: failureReason(rec)}
		if rec.DeliveryStatus == store.DeliveryFailed {
			st.Error = &MessageError{Code: rec.DeliveryError, Message: "delivery_failed"}
		}
	}
	writeJSON(w, http.StatusOK, st)
}

// PublicStatus maps a record to the api's status: queued, sending, sent, delivered, read,
// failed or parked.
func PublicStatus(rec store.OutboundRecord) string { return outbox.PublicStatus(rec) }

// failureReason is the reason code a failed record carries (failure_reason:
// "outside_customer_service_window", "no_token"…), or "whatsapp_permanent_error"; never the raw
// error text. Records failed before failure_reason existed said it as "reason: detail" in
// last_error: those are read too until they expire (store.DefaultRetention after this version).
func failureReason(rec store.OutboundRecord) string {
	if rec.FailureReason != "" {
		return rec.FailureReason
	}
	if r, _, ok := strings.Cut(rec.LastError, ":"); ok && legacyReasons[r] {
		return r
	}
	return delivery.ReasonRefused
}

// legacyReasons are the reasons records written before failure_reason carried in last_error.
var legacyReasons = map[string]bool{
	delivery.ReasonOutsideWindow: true, delivery.ReasonNoToken: true, delivery.ReasonTenantNotFound: true,
	delivery.ReasonTokenUnreadable: true, delivery.ReasonMalformedMessage: true, delivery.ReasonOutcomeUnknown: true,
}

// handleUsage answers GET /v1/usage?month=YYYY-MM: the caller's month, in the contract's shape.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	r, tenantID, ok := s.caller(w, r)
	if !ok {
		return
	}
	if s.deps.Usage == nil {
		fail(w, r, errors.New("no usage reporter"))
		return
	}
	rep, err := s.deps.Usage.Report(r.Context(), tenantID, r.URL.Query().Get("month"))
	if err != nil {
		fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
