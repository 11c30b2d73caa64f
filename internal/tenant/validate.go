package tenant

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // the IANA database in every binary: distroless images have none
	"unicode/utf8"

	"golang.org/x/text/currency"

	"github.com/wapipe/wapipe/internal/contact"
	"github.com/wapipe/wapipe/internal/i18n"
	"github.com/wapipe/wapipe/pricing"
)

var (
	idRE           = regexp.MustCompile(`^[a-z0-9-]{3,40}$`)
	digitsRE       = regexp.MustCompile(`^[0-9]{1,32}$`)
	waIDRE         = regexp.MustCompile(`^[0-9]{6,15}$`)
	intentNameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	fieldNameRE    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	modelRE        = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	templateNameRE = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	// Meta's template languages are a language code, sometimes with a region: id, en_US, zh_HK.
	templateLangRE = regexp.MustCompile(`^[a-z]{2,3}(_[A-Z]{2})?$`)
)

// Validate checks a tenant (with its defaults filled) and returns every problem as Problems,
// or nil. Lines are 0: Parse adds them when the tenant comes from a file.
func (t *Tenant) Validate() error {
	return t.validate().err()
}

func (t *Tenant) validate() Problems {
	var c problems
	if !idRE.MatchString(t.ID) {
		if t.ID == "" {
			c.add("id", "required: 3 to 40 characters of a-z, 0-9 and -")
		} else {
			c.add("id", "must be 3 to 40 characters of a-z, 0-9 and -")
		}
	}
	if strings.TrimSpace(t.Name) == "" {
		c.add("name", "required")
	}
	checkLanguage(&c, "language", t.Language, true)
	switch t.Audience {
	case AudienceMembers, AudiencePublic:
	case "":
		c.add("audience", "required: members or public")
	default:
		c.add("audience", "must be members or public, not %q", t.Audience)
	}
	t.validateNumbers(&c)
	t.validateMembers(&c)
	t.validateSending(&c)
	validateLimit(&c, "limits.conversation", t.Limits.Conversation)
	validateLimit(&c, "limits.sender", t.Limits.Sender)
	validateAPILimit(&c, t.Limits.API)
	if q := t.Quota.LLMCallsPerMonth; q != nil && *q < 0 {
		c.add("quota.llm_calls_per_month", "must be 0 or more (absent: unlimited)")
	}
	if q := t.Quota.PerSenderPerMonth; q != nil && *q < 1 {
		c.add("quota.per_sender_per_month", "must be 1 or more (absent: a tenth of llm_calls_per_month, at least %d)", MinSenderShare)
	}
	if cur := t.Currency; cur != "" {
		if u, err := currency.ParseISO(cur); err != nil || u.String() != cur {
			c.add("currency", "must be an ISO 4217 code such as IDR, EUR or USD, got %q", cur)
		}
	}
	if tz := t.TimeZone; tz != "" {
		if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
			c.add("time_zone", "must be an IANA time zone such as Asia/Makassar or Europe/Paris, got %q", tz)
		}
	}
	if b := t.Budget.MonthlyUSD; b != "" {
		if _, err := pricing.ParseUSD(b); err != nil {
			c.add("budget.monthly_usd", "must be an amount of US dollars like 50 or 12.50, got %q", b)
		}
	}
	if s := t.Budget.PerSenderShare; s != nil && (*s <= 0 || *s > 1) {
		c.add("budget.per_sender_share", "must be a fraction above 0 and at most 1 (absent: %g)", DefaultSenderShare)
	}
	for i, r := range t.Alerts {
		if !slices.Contains([]Role{RoleOwner, RoleAdmin, RoleMember}, r) {
			c.add(fmt.Sprintf("alerts[%d]", i), "must be owner, admin or member, got %q", r)
		}
	}
	if m := t.Assistant.MediaLimits; m.AudioSeconds < 0 || m.VideoSeconds < 0 || m.PDFPages < 0 || m.ImageBytes < 0 {
		c.add("assistant.media_limits", "must be positive numbers (absent: %d s of audio, %d s of video, %d pages, %d bytes of image)",
			DefaultMediaLimits.AudioSeconds, DefaultMediaLimits.VideoSeconds, DefaultMediaLimits.PDFPages, DefaultMediaLimits.ImageBytes)
	}
	t.validateAssistant(&c)
	checkTemplate(&c, "templates.notify", t.Templates.Notify)
	if n := t.Templates.Notify; n != nil && len(n.Components) > 0 {
		c.add("templates.notify.components", "not taken: a notification fills its body with the intent, the sender and the data")
	}
	if r := t.Templates.Reengage; r != nil {
		checkTemplate(&c, "templates.reengage", r)
		validateComponents(&c, "templates.reengage.components", r.Components)
	}
	if n := t.Templates.MaxCreated; n < 0 || n > MaxMaxCreated {
		c.add("templates.max_created", "must be 1 to %d (absent: %d)", MaxMaxCreated, DefaultMaxCreated)
	}
	for i, name := range t.Templates.Common {
		if !templateNameRE.MatchString(name) {
			c.add(index("templates.common", i), "%q: a template name (lower-case letters, digits and underscores)", name)
		}
	}
	return c.list
}

func checkLanguage(c *problems, path, lang string, required bool) {
	switch {
	case lang == "" && !required:
	case lang == "":
		c.add(path, "required: one of %s", strings.Join(i18n.Languages(), ", "))
	case !i18n.Supported(lang):
		c.add(path, "must be one of %s, not %q", strings.Join(i18n.Languages(), ", "), lang)
	}
}

func (t *Tenant) validateNumbers(c *problems) {
	if len(t.PhoneNumbers) == 0 {
		c.add("phone_numbers", "required: at least one {phone_number_id, waba_id}")
	}
	first := map[string]int{}
	for i, p := range t.PhoneNumbers {
		path := index("phone_numbers", i)
		switch {
		case p.PhoneNumberID == "":
			c.add(path+".phone_number_id", "required")
		case !digitsRE.MatchString(p.PhoneNumberID):
			c.add(path+".phone_number_id", "must be digits (the Graph id of the number, not the number itself)")
		default:
			if j, dup := first[p.PhoneNumberID]; dup {
				c.add(path+".phone_number_id", "%s is listed twice (also phone_numbers[%d])", p.PhoneNumberID, j)
			} else {
				first[p.PhoneNumberID] = i
			}
		}
		switch {
		case p.WABAID == "":
			c.add(path+".waba_id", "required")
		case !digitsRE.MatchString(p.WABAID):
			c.add(path+".waba_id", "must be digits")
		}
	}
}

func (t *Tenant) validateMembers(c *problems) {
	first := map[contact.Key]int{}
	for i, m := range t.Members {
		path := index("members", i)
		// A member's number or id is never echoed, not even in an error.
		switch {
		case m.WaID == "" && m.UserID == "":
			c.add(path, "wa_id or user_id required: the member's phone number, or their business-scoped user id")
		case m.WaID != "" && !waIDRE.MatchString(m.WaID):
			c.add(path+".wa_id", "must be 6 to 15 digits: the number in international form without + or spaces")
		case m.UserID != "" && !contact.ValidUserID(m.UserID) && !contact.ValidParentUserID(m.UserID):
			c.add(path+".user_id", `must be a business-scoped user id as Meta gives it ("CC." then letters or digits, e.g. US.13491208655302741918), or a parent one ("CC.ENT.…")`)
		default:
			for _, k := range m.Identity().Keys() {
				if j, dup := first[k]; dup {
					c.add(path+"."+string(keyField(k)), "same person as members[%d]", j)
				} else {
					first[k] = i
				}
			}
		}
		checkRole(c, path+".role", m.Role)
		checkLanguage(c, path+".language", m.Language, false)
	}
}

func checkRole(c *problems, path string, r Role) {
	switch r {
	case RoleOwner, RoleAdmin, RoleMember:
	case "":
		c.add(path, "required: owner, admin or member")
	default:
		c.add(path, "must be owner, admin or member, not %q", r)
	}
}

func (t *Tenant) validateSending(c *problems) {
	s := t.Sending
	if !(s.PerSecond > 0 && s.PerSecond <= MaxPerSecond) {
		c.add("sending.per_second", "must be more than 0 and at most %d (Cloud Tasks' limit)", MaxPerSecond)
	}
	if s.MaxConcurrent < 1 || s.MaxConcurrent > MaxConcurrentLimit {
		c.add("sending.max_concurrent", "must be 1 to %d", MaxConcurrentLimit)
	}
}

func validateLimit(c *problems, path string, l Limit) {
	if l.Max < 1 {
		c.add(path+".max", "must be 1 or more")
	}
	if l.Per <= 0 {
		c.add(path+".per", "must be a positive duration, such as 30s or 5m")
	}
}

func validateAPILimit(c *problems, l APILimit) {
	if r := l.PerSecond; r != nil && !(*r > 0 && *r <= MaxAPIPerSecond) {
		c.add("limits.api.per_second", "must be more than 0 and at most %d: requests a second per API key (absent: the api's API_RATE_PER_KEY)", MaxAPIPerSecond)
	}
	if b := l.Burst; b != nil && (*b < 1 || *b > MaxAPIBurst) {
		c.add("limits.api.burst", "must be 1 to %d: requests at once per API key (absent: the api's API_BURST_PER_KEY)", MaxAPIBurst)
	}
}

// validateFields checks intent in's fields (path is the intent's): their names, types, labels,
// and that a money field has the tenant's currency.
func (t *Tenant) validateFields(c *problems, path string, in Intent) {
	for _, f := range in.Fields {
		fp := path + ".fields." + f.Name
		if !fieldNameRE.MatchString(f.Name) {
			c.add(fp, "a field name must be a lower-case word of a-z, 0-9 and _ starting with a letter")
		}
		if !slices.Contains(FieldTypes(), f.Type) {
			c.add(fp, "unknown type %q: %s", f.Type, fieldTypeList())
		}
		if f.Type == FieldMoney && t.Currency == "" {
			c.add(fp, "a money field needs the tenant's currency (currency: IDR)")
		}
		for _, lang := range slices.Sorted(maps.Keys(f.Label)) {
			if l := f.Label[lang]; !i18n.Supported(lang) || strings.TrimSpace(l) == "" || utf8.RuneCountInString(l) > 40 {
				c.add(fp+".label."+lang, "a label is 1 to 40 characters in one of %s", strings.Join(i18n.Languages(), ", "))
			}
		}
	}
}

// checkDefaults checks intent in's defaults: each names a string field, filled with the sender.
func checkDefaults(c *problems, path string, in Intent) {
	for _, name := range slices.Sorted(maps.Keys(in.Defaults)) {
		f, ok := in.Fields.Lookup(name)
		switch {
		case !ok:
			c.add(path+".defaults."+name, "%q is not one of the intent's fields", name)
		case in.Defaults[name] != DefaultSender:
			c.add(path+".defaults."+name, "the only default is %s (the sender's name)", DefaultSender)
		case f.Type != FieldString:
			c.add(path+".defaults."+name, "a field filled with the sender's name must be of type string")
		}
	}
}

func (t *Tenant) validateAssistant(c *problems) {
	a := t.Assistant
	if p := a.HumanPause; p < 0 || p > 7*24*time.Hour {
		c.add("assistant.human_pause", "must be a duration from 1m to 168h, such as 30m (absent: 30m)")
	}
	switch a.Mode {
	case ModeAck, ModeLLM:
	default:
		c.add("assistant.mode", "must be ack or llm, not %q", a.Mode)
	}
	if n := utf8.RuneCountInString(a.AckText); n > maxTextLen {
		c.add("assistant.ack_text", "is %d characters; WhatsApp allows %d", n, maxTextLen)
	}
	if !modelRE.MatchString(a.Model) {
		c.add("assistant.model", "must be a model name such as %s", DefaultModel)
	}
	if !(a.MinConfidence >= 0 && a.MinConfidence <= 1) {
		c.add("assistant.min_confidence", "must be between 0 and 1")
	}
	if a.ActionURL != "" {
		if _, err := ParseActionURL(a.ActionURL); err != nil {
			c.add("assistant.action_url", "%s", err.Error())
		}
	} else if a.Mode == ModeLLM && len(a.Intents) > 0 {
		c.add("assistant.action_url", "required in llm mode when there are intents: every intent calls it")
	}
	first := map[string]int{}
	for i, in := range a.Intents {
		path := index("assistant.intents", i)
		switch {
		case in.Name == "":
			c.add(path+".name", "required")
		case in.Name == GeneralQuery:
			c.add(path+".name", "%s is built in; choose another name", GeneralQuery)
		case !intentNameRE.MatchString(in.Name):
			c.add(path+".name", "must be a lower-case word of a-z, 0-9 and _ starting with a letter, at most 64 characters")
		default:
			if j, dup := first[in.Name]; dup {
				c.add(path+".name", "%s is listed twice (also assistant.intents[%d])", in.Name, j)
			} else {
				first[in.Name] = i
			}
		}
		if strings.TrimSpace(in.Description) == "" {
			c.add(path+".description", "required: it tells the model when the intent applies")
		}
		t.validateFields(c, path, in)
		seen := map[string]bool{}
		for j, r := range in.Required {
			rp := index(path+".required", j)
			switch {
			case seen[r]:
				c.add(rp, "%s is listed twice", r)
			case !slices.Contains(in.Fields.Names(), r):
				c.add(rp, "%q is not one of the intent's fields", r)
			}
			seen[r] = true
		}
		for j, r := range in.Roles {
			checkRole(c, index(path+".roles", j), r)
		}
		checkNotify(c, path+".notify", in.Notify)
		checkDefaults(c, path, in)
	}
}

// ParseActionURL parses raw as an action URL: an absolute https:// URL, or http:// to a loopback
// host (127.0.0.1, ::1, localhost) for local development, with no user or password. The error
// says what is wrong without quoting raw. It checks the form only: outside dev, `tenants apply`
// also requires https:// to a public address (operator.Tenants, with action.CheckPublicURL),
// which needs the environment and DNS, which a tenant file has not. The action client checks
// with this function too, so a file and a call agree.
func ParseActionURL(raw string) (*url.URL, error) {
	want := errors.New("must be an absolute https:// URL (http:// only to a loopback host such as 127.0.0.1, with APP_ENV=dev)")
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, want
	}
	if u.User != nil {
		return nil, errors.New("must not carry a user or password: wapipe signs each call with the action secret")
	}
	switch {
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return u, nil
	}
	return nil, want
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NumberUse is how the tenants use a business number now (the phone_numbers index).
type NumberUse struct {
	// TenantIDs are the tenants that list the number, sorted.
	TenantIDs []string
	// Shared: they list it with shared: true.
	Shared bool
	// WABAID is the WhatsApp Business Account they give for it.
	WABAID string
	// Primary is the tenant whose entry says primary: true, "" when none does (a number
	// shared before primary existed).
	Primary string
}

// CheckNumbers checks t's numbers against the tenants that list them now (uses, by
// phone_number_id) and returns one problem per number t may not list, as Problems, or nil. A
// number may be listed by several tenants only when every one of them says shared: true with
// the same waba_id, and at most one of them says primary: true (strangers go to it, never to a
// tenant that joined later and sorts first; a shared number without one sends them to its first
// tenant, as before primary existed); t's own entry in uses is not counted, so t may share,
// un-share or change a number no other tenant lists.
func CheckNumbers(t *Tenant, uses map[string]NumberUse) error {
	var c problems
	for i, p := range t.PhoneNumbers {
		path := index("phone_numbers", i)
		if p.Primary && !p.Shared {
			c.add(path+".primary", "%s: primary: true is for a shared number (shared: true)", p.PhoneNumberID)
			continue
		}
		u, ok := uses[p.PhoneNumberID]
		if !ok {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(u.TenantIDs), func(id string) bool { return id == t.ID })
		if len(others) == 0 {
			continue
		}
		primary := u.Primary
		if primary == t.ID {
			primary = ""
		}
		switch {
		case !u.Shared && p.Shared:
			c.add(path+".shared", "%s already belongs to tenant %s, which does not list it shared: true", p.PhoneNumberID, others[0])
		case !u.Shared:
			c.add(path+".phone_number_id", "%s already belongs to tenant %s", p.PhoneNumberID, others[0])
		case !p.Shared:
			c.add(path+".shared", "%s is shared with tenant %s: list it with shared: true", p.PhoneNumberID, strings.Join(others, ", "))
		case u.WABAID != p.WABAID:
			c.add(path+".waba_id", "%s is shared with tenant %s under waba_id %s: every tenant must give the same waba_id", p.PhoneNumberID, strings.Join(others, ", "), u.WABAID)
		case p.Primary && primary != "":
			c.add(path+".primary", "%s: tenant %s is its primary already (strangers go there); one tenant per shared number says primary: true", p.PhoneNumberID, primary)
		}
	}
	return c.list.err()
}

// sortByLine orders problems by line, keeping the order of those on the same line.
func sortByLine(ps Problems) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Line < ps[j].Line })
}

// keyField is the file field an identifier comes from.
func keyField(k contact.Key) string {
	if k.Kind == contact.KindPhone {
		return "wa_id"
	}
	return "user_id"
}
