package tenant

import (
	"slices"
	"time"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/pricing"
)

// Tenant is one business, as in its tenant file. Parse returns it with the defaults filled.
type Tenant struct {
	// ID names the tenant everywhere: [a-z0-9-]{3,40}.
	ID string `yaml:"id" firestore:"id"`
	// Name is the business's display name.
	Name string `yaml:"name" firestore:"name"`
	// Language is the language of system messages and the assistant's default: one of
	// i18n.Languages.
	Language string `yaml:"language" firestore:"language"`
	// Currency is the ISO 4217 code of the business's money (fields of type money); empty
	// when it has none.
	Currency string `yaml:"currency,omitempty" firestore:"currency,omitempty"`
	// TimeZone is the business's IANA time zone ("Asia/Makassar"): the day a turn happens on,
	// for the model's "today" and "tomorrow". Empty is UTC.
	TimeZone string `yaml:"time_zone,omitempty" firestore:"time_zone,omitempty"`
	// Audience says who is served.
	Audience Audience `yaml:"audience" firestore:"audience"`
	// PhoneNumbers are the WhatsApp business numbers the tenant owns; at least one. The first
	// is the tenant's default sender.
	PhoneNumbers []PhoneNumber `yaml:"phone_numbers" firestore:"phone_numbers"`
	// Members are the members the file declares.
	Members []Member `yaml:"members,omitempty" firestore:"members"`
	// Sending is the tenant's own send queue's rate.
	Sending Sending `yaml:"sending" firestore:"sending"`
	// Limits are the inbound rate limits applied before any LLM call, and the limit of the
	// tenant's API keys on the api.
	Limits Limits `yaml:"limits" firestore:"limits"`
	// Quota caps the LLM calls.
	Quota Quota `yaml:"quota,omitempty" firestore:"quota"`
	// Budget caps the money a month costs (CONTRACT.md, Money).
	Budget Budget `yaml:"budget,omitempty" firestore:"budget"`
	// Alerts are the roles told of budget thresholds and every owner notice; nil is
	// DefaultAlerts.
	Alerts []Role `yaml:"alerts,omitempty" firestore:"alerts,omitempty"`
	// Assistant says how messages are answered.
	Assistant Assistant `yaml:"assistant" firestore:"assistant"`
	// Templates are the message templates wapipe uses on the tenant's behalf.
	Templates Templates `yaml:"templates,omitempty" firestore:"templates"`
}

// Audience says who a tenant serves.
type Audience string

const (
	// AudienceMembers: only members are served; others get the onboarding prompt.
	AudienceMembers Audience = "members"
	// AudiencePublic: anyone is served.
	AudiencePublic Audience = "public"
)

// PhoneNumber is a WhatsApp business number, by its Graph ids.
type PhoneNumber struct {
	// PhoneNumberID is the Graph id of the number (metadata.phone_number_id in webhooks).
	PhoneNumberID string `yaml:"phone_number_id" firestore:"phone_number_id"`
	// WABAID is the WhatsApp Business Account that holds it.
	WABAID string `yaml:"waba_id" firestore:"waba_id"`
	// Shared: several tenants list this number, each with shared: true and the same waba_id,
	// and the contact's membership decides which tenant a message is for.
	Shared bool `yaml:"shared,omitempty" firestore:"shared,omitempty"`
	// Primary marks, on a shared number, the one tenant that strangers' messages go to (and
	// whose language the number speaks to them): exactly one tenant per shared number says it.
	Primary bool `yaml:"primary,omitempty" firestore:"primary,omitempty"`
}

// Role is a member's role.
type Role string

// The roles, from most to least powerful.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Member is a person the tenant knows, by phone number, by business-scoped user id (BSUID), or
// both: a person who took a WhatsApp username may write with their BSUID alone.
type Member struct {
	// WaID is the member's phone number in international form, digits only.
	WaID string `yaml:"wa_id,omitempty" firestore:"wa_id"`
	// UserID is the member's BSUID ("CC.…") or parent BSUID ("CC.ENT.…"), as Meta gives it.
	UserID string `yaml:"user_id,omitempty" firestore:"user_id,omitempty"`
	// Role defaults to RoleMember.
	Role Role `yaml:"role" firestore:"role"`
	// Name is how the business calls the member; optional.
	Name string `yaml:"name,omitempty" firestore:"name"`
	// Language overrides the tenant's for this member; optional.
	Language string `yaml:"language,omitempty" firestore:"language"`
}

// Sending is the rate of a tenant's send queue (a Cloud Tasks queue).
type Sending struct {
	// PerSecond is the queue's max dispatch rate: > 0 and at most MaxPerSecond.
	PerSecond float64 `yaml:"per_second" firestore:"per_second"`
	// MaxConcurrent is the queue's max concurrent dispatches: 1 to MaxConcurrentLimit.
	MaxConcurrent int `yaml:"max_concurrent" firestore:"max_concurrent"`
}

// Limits are inbound rate limits: over one, a message gets one localized notice per window
// and no LLM call. API is the api's limit of the tenant's own calls.
type Limits struct {
	// Conversation limits one conversation (tenant, number, contact).
	Conversation Limit `yaml:"conversation" firestore:"conversation"`
	// Sender limits one contact across the tenant's numbers.
	Sender Limit `yaml:"sender" firestore:"sender"`
	// API limits each of the tenant's API keys on the api (per api instance); a field the file
	// leaves out takes the api's API_RATE_PER_KEY or API_BURST_PER_KEY.
	API APILimit `yaml:"api,omitempty" firestore:"api,omitempty"`
}

// APILimit is a token bucket per API key: PerSecond requests a second on average and Burst at
// once. A business's burst of sends is paced afterwards by its send queue (Sending), so the
// burst is what one campaign may post at once. nil means the api's default.
type APILimit struct {
	PerSecond *float64 `yaml:"per_second,omitempty" firestore:"per_second,omitempty"`
	Burst     *int     `yaml:"burst,omitempty" firestore:"burst,omitempty"`
}

// Or returns the limit's rate and burst, rate and burst standing for the fields it leaves out.
func (l APILimit) Or(rate float64, burst int) (float64, int) {
	if l.PerSecond != nil {
		rate = *l.PerSecond
	}
	if l.Burst != nil {
		burst = *l.Burst
	}
	return rate, burst
}

// Limit allows Max messages per window of Per.
type Limit struct {
	Max int `yaml:"max" firestore:"max"`
	// Per is written as a Go duration in the file ("30s", "5m"); Firestore stores it as
	// integer nanoseconds.
	Per time.Duration `yaml:"per" firestore:"per"`
}

// MarshalYAML writes Per as the file does ("5m", not Duration.String's "5m0s").
func (l Limit) MarshalYAML() (any, error) {
	return struct {
		Max int    `yaml:"max"`
		Per string `yaml:"per"`
	}{l.Max, fmtDuration(l.Per)}, nil
}

// Quota caps a tenant's LLM calls.
type Quota struct {
	// LLMCallsPerMonth is nil when the file has none, which means unlimited (the contract:
	// "absent: unlimited"). An explicit 0 means no LLM calls at all: an operator who writes 0 to
	// stop spending must get exactly that.
	LLMCallsPerMonth *int `yaml:"llm_calls_per_month,omitempty" firestore:"llm_calls_per_month,omitempty"`
	// PerSenderPerMonth caps the LLM calls one contact may use in a month, so one contact
	// cannot spend a public tenant's whole quota; nil takes the default (see SenderShare).
	PerSenderPerMonth *int `yaml:"per_sender_per_month,omitempty" firestore:"per_sender_per_month,omitempty"`
}

// Location is the tenant's time zone (UTC when the file names none, or names one this binary
// does not know: apply refuses that).
func (t *Tenant) Location() *time.Location {
	if t.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(t.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Budget caps what a tenant spends in a UTC month: Meta's messages and the model together, in
// USD, checked before each LLM call and each billable send wapipe starts itself.
type Budget struct {
	// MonthlyUSD is a decimal ("50", "12.50"); empty means no budget.
	MonthlyUSD string `yaml:"monthly_usd,omitempty" firestore:"monthly_usd,omitempty"`
	// PerSenderShare is the fraction of MonthlyUSD one contact's turns may spend; nil is
	// DefaultSenderShare.
	PerSenderShare *float64 `yaml:"per_sender_share,omitempty" firestore:"per_sender_share,omitempty"`
}

// DefaultHumanPause is the assistant's silence after a human's answer when the file sets none.
const DefaultHumanPause = 30 * time.Minute

// EffectiveHumanPause is the assistant's silence after a human's answer.
func (a Assistant) EffectiveHumanPause() time.Duration {
	if a.HumanPause <= 0 {
		return DefaultHumanPause
	}
	return a.HumanPause
}

// MediaLimits cap one file the model is to read: a longer voice note, video or PDF, or a bigger
// image, is answered "too long" before the call (its tokens would cost more than the turn is
// worth: a minute of audio is about 1,900 tokens, a page of a PDF 258).
type MediaLimits struct {
	AudioSeconds int `yaml:"audio_seconds,omitempty" firestore:"audio_seconds,omitempty"`
	VideoSeconds int `yaml:"video_seconds,omitempty" firestore:"video_seconds,omitempty"`
	PDFPages     int `yaml:"pdf_pages,omitempty" firestore:"pdf_pages,omitempty"`
	ImageBytes   int `yaml:"image_bytes,omitempty" firestore:"image_bytes,omitempty"`
}

// DefaultMediaLimits are the caps when the file sets none: ten minutes of audio, two of video,
// 50 pages, 5 MiB of image (WhatsApp's own image limit).
var DefaultMediaLimits = MediaLimits{AudioSeconds: 600, VideoSeconds: 120, PDFPages: 50, ImageBytes: 5 << 20}

// Effective is l with its zero fields taken from DefaultMediaLimits.
func (l MediaLimits) Effective() MediaLimits {
	d := DefaultMediaLimits
	for _, f := range []struct{ v, def *int }{{&l.AudioSeconds, &d.AudioSeconds}, {&l.VideoSeconds, &d.VideoSeconds},
		{&l.PDFPages, &d.PDFPages}, {&l.ImageBytes, &d.ImageBytes}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// DefaultSenderShare is a contact's share of the monthly budget when the file names none.
const DefaultSenderShare = 0.1

// Monthly is the budget and whether there is one.
func (b Budget) Monthly() (pricing.Amount, bool) {
	if b.MonthlyUSD == "" {
		return 0, false
	}
	a, err := pricing.ParseUSD(b.MonthlyUSD)
	return a, err == nil
}

// SenderShare is what one contact's turns may spend in a month, and whether there is a cap.
func (b Budget) SenderShare() (pricing.Amount, bool) {
	monthly, ok := b.Monthly()
	if !ok {
		return 0, false
	}
	share := DefaultSenderShare
	if b.PerSenderShare != nil {
		share = *b.PerSenderShare
	}
	// A fraction in millionths: exact enough for a share, and integer arithmetic.
	return monthly.Fraction(int64(share*1e6+0.5), 1e6), true
}

// DefaultAlerts are the roles told of budget thresholds when the file names none.
var DefaultAlerts = []Role{RoleOwner, RoleAdmin}

// AlertRoles are the roles told of budget thresholds and owner notices.
func (t *Tenant) AlertRoles() []Role {
	if t.Alerts == nil {
		return DefaultAlerts
	}
	return t.Alerts
}

// MinSenderShare is the smallest default share of one contact (see Quota.SenderShare).
const MinSenderShare = 10

// SenderShare returns the monthly cap of LLM calls of one contact and whether there is one:
// per_sender_per_month when set, else a tenth of the monthly quota and at least MinSenderShare;
// no cap when neither is set.
func (q Quota) SenderShare() (limit int, limited bool) {
	if q.PerSenderPerMonth != nil {
		return *q.PerSenderPerMonth, true
	}
	monthly, ok := q.MonthlyLLMCalls()
	if !ok {
		return 0, false
	}
	return max(monthly/10, MinSenderShare), true
}

// MonthlyLLMCalls returns the monthly cap of LLM calls and whether there is one: absent means
// unlimited, 0 means none.
func (q Quota) MonthlyLLMCalls() (limit int, limited bool) {
	if q.LLMCallsPerMonth == nil {
		return 0, false
	}
	return *q.LLMCallsPerMonth, true
}

// Mode is how the assistant answers.
type Mode string

const (
	// ModeAck answers every message with a fixed acknowledgement.
	ModeAck Mode = "ack"
	// ModeLLM answers with the LLM and the tenant's intents.
	ModeLLM Mode = "llm"
)

// Assistant configures the answers to inbound messages.
type Assistant struct {
	Mode Mode `yaml:"mode" firestore:"mode"`
	// AckText is the reply in ModeAck; empty means the i18n.Ack message in the tenant's
	// language (see Tenant.EffectiveAckText).
	AckText string `yaml:"ack_text,omitempty" firestore:"ack_text"`
	// Model is the Vertex AI Gemini model.
	Model string `yaml:"model" firestore:"model"`
	// Instructions is the business's own prompt.
	Instructions string `yaml:"instructions,omitempty" firestore:"instructions"`
	// MinConfidence: below it the model's reply is a clarification and nothing is pending.
	MinConfidence float64 `yaml:"min_confidence" firestore:"min_confidence"`
	// ActionURL receives the actions of intents; required in ModeLLM when there are intents.
	ActionURL string `yaml:"action_url,omitempty" firestore:"action_url"`
	// Intents are the requests the assistant recognises besides GeneralQuery, in file order.
	Intents []Intent `yaml:"intents,omitempty" firestore:"intents"`
	// HumanPause is how long the assistant stays silent in a conversation after a human of the
	// business answered there (a console reply, a WhatsApp Business app message); zero is
	// DefaultHumanPause.
	HumanPause time.Duration `yaml:"human_pause,omitempty" firestore:"human_pause,omitempty"`
	// MediaLimits cap what one file the model reads may hold; zero fields take the defaults
	// (DefaultMediaLimits).
	MediaLimits MediaLimits `yaml:"media_limits,omitempty" firestore:"media_limits"`
}

// GeneralQuery is the built-in intent of a message that asks for no action; the model answers
// it from the instructions. No tenant intent may take the name.
const GeneralQuery = "general_query"

// Intent is a request the assistant recognises and turns into an action call.
type Intent struct {
	// Name is [a-z][a-z0-9_]{0,63}, unique in the tenant, not GeneralQuery.
	Name string `yaml:"name" firestore:"name"`
	// Description tells the model what the intent is.
	Description string `yaml:"description" firestore:"description"`
	// Fields are the data the model extracts, in file order.
	Fields Fields `yaml:"fields,omitempty" firestore:"fields"`
	// Required are the fields without which the model asks a question instead.
	Required []string `yaml:"required,omitempty" firestore:"required"`
	// Confirm makes the assistant ask with Yes/No buttons before acting.
	Confirm bool `yaml:"confirm" firestore:"confirm"`
	// Roles, when set, are the only member roles allowed to use the intent.
	Roles []Role `yaml:"roles,omitempty" firestore:"roles"`
	// Notify are the member roles told of each of the intent's actions once it succeeds (package
	// notify): every member with one of them, except the member who asked.
	Notify []Role `yaml:"notify,omitempty" firestore:"notify"`
	// Defaults fill fields the model left out: DefaultSender fills a string field with the
	// sender's name (a driver reporting "AC mati" is the driver of the report).
	Defaults map[string]string `yaml:"defaults,omitempty" firestore:"defaults,omitempty"`
}

// AllowedFor reports whether a sender with role may use the intent. A non-member has the
// empty role and may use only intents with no Roles.
func (i Intent) AllowedFor(role Role) bool {
	return len(i.Roles) == 0 || slices.Contains(i.Roles, role)
}

// FieldType is the type of an intent field, which the model's response schema uses.
type FieldType string

// The field types. Dates and times are strings in ISO 8601 form.
const (
	FieldString   FieldType = "string"   // free text
	FieldInteger  FieldType = "integer"  // a whole number
	FieldNumber   FieldType = "number"   // any number
	FieldBoolean  FieldType = "boolean"  // true or false
	FieldDate     FieldType = "date"     // YYYY-MM-DD
	FieldTime     FieldType = "time"     // HH:MM, 24-hour, the business's local time (a departure time)
	FieldDateTime FieldType = "datetime" // YYYY-MM-DDTHH:MM, the business's local time
	FieldMoney    FieldType = "money"    // an amount in the tenant's currency, a plain number
)

// DefaultSender is the one default of Intent.Defaults: the sender's name.
const DefaultSender = "sender"

// FieldTypes lists the valid field types.
func FieldTypes() []FieldType {
	return []FieldType{FieldString, FieldInteger, FieldNumber, FieldBoolean, FieldDate, FieldTime, FieldDateTime, FieldMoney}
}

// Field is one datum of an intent.
type Field struct {
	Name string    `yaml:"name" firestore:"name"`
	Type FieldType `yaml:"type" firestore:"type"`
	// Label is what a confirmation calls the field, per language code; the name when the
	// conversation's language has none.
	Label map[string]string `yaml:"label,omitempty" firestore:"label,omitempty"`
}

// LabelIn is f's label in lang: its own, else the name.
func (f Field) LabelIn(lang string) string {
	if l := f.Label[lang]; l != "" {
		return l
	}
	return f.Name
}

// Templates are the tenant's message templates (approved by Meta).
type Templates struct {
	// Reengage is sent when a reply falls outside the 24-hour customer service window.
	Reengage *Template `yaml:"reengage,omitempty" firestore:"reengage,omitempty"`
	// Notify carries a notification (an intent's notify) to a member outside their 24-hour
	// window; without it such a notification is skipped. Never replaced by Reengage.
	Notify *Template `yaml:"notify,omitempty" firestore:"notify,omitempty"`
	// Common names the templates this tenant created on an account it shares with other
	// tenants that those tenants may list and send too; every other template it created there
	// is its own.
	Common []string `yaml:"common,omitempty" firestore:"common,omitempty"`
	// MaxCreated caps the templates (each name in each language) this tenant may create
	// through wapipe on an account it shares with other tenants, which share the account's
	// template limit at Meta; DefaultMaxCreated when zero.
	MaxCreated int `yaml:"max_created,omitempty" firestore:"max_created,omitempty"`
}

// DefaultMaxCreated is templates.max_created when the file says none (the contract's 50), and
// MaxMaxCreated its highest value (Meta's limit for a verified account's templates).
const (
	DefaultMaxCreated = 50
	MaxMaxCreated     = 6000
)

// CreatedCap is the templates the tenant may create on a shared account (templates.max_created).
func (t Templates) CreatedCap() int {
	if t.MaxCreated == 0 {
		return DefaultMaxCreated
	}
	return t.MaxCreated
}

// Template names an approved template.
type Template struct {
	Name string `yaml:"name" firestore:"name"`
	// Language is Meta's template language code: "id", "en_US".
	Language string `yaml:"language" firestore:"language"`
	// Components fill the template's variables, as in Meta's send body; {{contact_name}} in a
	// text parameter becomes the contact's name (templates.go).
	Components []TemplateComponent `yaml:"components,omitempty" firestore:"components,omitempty"`
}

// The contract's defaults and Cloud Tasks' bounds.
const (
	DefaultPerSecond       = 20
	DefaultMaxConcurrent   = 2
	DefaultConversationMax = 5
	DefaultConversationPer = 30 * time.Second
	DefaultSenderMax       = 20
	DefaultSenderPer       = 5 * time.Minute
	DefaultMode            = ModeAck
	DefaultModel           = "gemini-2.5-flash"
	DefaultMinConfidence   = 0.7
	DefaultRole            = RoleMember
	MaxPerSecond           = 500  // Cloud Tasks' max dispatches per second
	MaxConcurrentLimit     = 1000 // Cloud Tasks' max concurrent dispatches
	// MaxAPIPerSecond and MaxAPIBurst bound limits.api: far above any business's need, low
	// enough that a typo (an extra zero or three) is caught rather than becoming no limit.
	MaxAPIPerSecond = 10_000
	MaxAPIBurst     = 100_000

	maxTextLen = 4096 // WhatsApp's limit on a text message body (ack_text)
)

// ApplyDefaults fills the zero fields that have a default: sending (20/s, 2 concurrent),
// limits (conversation 5 per 30s, sender 20 per 5m), assistant mode ack, model
// gemini-2.5-flash, min_confidence 0.7, and each member's role (member). It cannot tell an
// explicit zero from an absent value; Parse, which sees the file, keeps explicit zeros so
// Validate can reject them (or, for min_confidence, keep them).
func (t *Tenant) ApplyDefaults() { applyDefaults(t, nil) }

// applyDefaults fills zero fields whose path is not in explicit.
func applyDefaults(t *Tenant, explicit map[string]bool) {
	set := func(path string, zero bool, fill func()) {
		if zero && !explicit[path] {
			fill()
		}
	}
	s, l, a := &t.Sending, &t.Limits, &t.Assistant
	set("sending.per_second", s.PerSecond == 0, func() { s.PerSecond = DefaultPerSecond })
	set("sending.max_concurrent", s.MaxConcurrent == 0, func() { s.MaxConcurrent = DefaultMaxConcurrent })
	set("limits.conversation.max", l.Conversation.Max == 0, func() { l.Conversation.Max = DefaultConversationMax })
	set("limits.conversation.per", l.Conversation.Per == 0, func() { l.Conversation.Per = DefaultConversationPer })
	set("limits.sender.max", l.Sender.Max == 0, func() { l.Sender.Max = DefaultSenderMax })
	set("limits.sender.per", l.Sender.Per == 0, func() { l.Sender.Per = DefaultSenderPer })
	set("assistant.mode", a.Mode == "", func() { a.Mode = DefaultMode })
	set("assistant.model", a.Model == "", func() { a.Model = DefaultModel })
	set("assistant.min_confidence", a.MinConfidence == 0, func() { a.MinConfidence = DefaultMinConfidence })
	for i := range t.Members {
		m := &t.Members[i]
		set(index("members", i)+".role", m.Role == "", func() { m.Role = DefaultRole })
	}
}

// Identity is the person the member entry names.
func (m Member) Identity() contact.Identity {
	id := contact.Identity{WaID: m.WaID, Name: m.Name}
	if contact.ValidParentUserID(m.UserID) {
		id.ParentUserID = m.UserID
	} else {
		id.UserID = m.UserID
	}
	return id
}

// MemberOf returns the file's member that the person id is: listed by one of id's identifiers
// (its phone, its BSUID or its parent BSUID).
func (t *Tenant) MemberOf(id contact.Identity) (Member, bool) {
	for _, m := range t.Members {
		if m.Identity().Matches(id) {
			return m, true
		}
	}
	return Member{}, false
}

// OwnsNumber reports whether phoneNumberID is one of the tenant's numbers.
func (t *Tenant) OwnsNumber(phoneNumberID string) bool {
	return slices.ContainsFunc(t.PhoneNumbers, func(p PhoneNumber) bool { return p.PhoneNumberID == phoneNumberID })
}

// SharesNumber reports whether phoneNumberID is one of the tenant's numbers listed shared: true.
func (t *Tenant) SharesNumber(phoneNumberID string) bool {
	return slices.ContainsFunc(t.PhoneNumbers, func(p PhoneNumber) bool { return p.PhoneNumberID == phoneNumberID && p.Shared })
}

// Intent returns the tenant's intent called name (never GeneralQuery, which is built in).
func (t *Tenant) Intent(name string) (Intent, bool) {
	for _, in := range t.Assistant.Intents {
		if in.Name == name {
			return in, true
		}
	}
	return Intent{}, false
}

// EffectiveLanguage is the language to talk to m in: the member's own, else the tenant's.
// Pass the zero Member for a non-member.
func (t *Tenant) EffectiveLanguage(m Member) string {
	if m.Language != "" {
		return m.Language
	}
	return t.Language
}

// EffectiveAckText is the reply in ModeAck: ack_text, else the i18n.Ack message in the
// tenant's language.
func (t *Tenant) EffectiveAckText() string {
	if t.Assistant.AckText != "" {
		return t.Assistant.AckText
	}
	return i18n.Text(t.Language, i18n.Ack)
}
