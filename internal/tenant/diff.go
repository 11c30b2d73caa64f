package tenant

import (
	"github.com/wapipe/wapipe/internal/contact"
	"maps"

	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ChangeKind is the mark of a Change: '+' added, '-' removed, '~' modified.
type ChangeKind byte

// The kinds of Change.
const (
	Added    ChangeKind = '+'
	Removed  ChangeKind = '-'
	Modified ChangeKind = '~'
)

// Change is one line of what an apply changes.
type Change struct {
	Kind ChangeKind
	// Path names the field or list: "language", "members", "assistant.intents[create_booking].roles".
	Path string
	// Text is the value added or removed, or "old -> new".
	Text string
}

// String renders the change as one line: "~ language: en -> fr".
func (c Change) String() string { return string(c.Kind) + " " + c.Path + ": " + c.Text }

// Diff returns what applying next over prev changes, one Change a line, in the file's order:
// scalars as "~ path: old -> new", list items (numbers by phone_number_id, members by wa_id,
// intents by name) as "+ list: item" and "- list: item", changes inside an item as
// "~ list[item].field: old -> new", and "~ list: order …" when only the order changed. prev
// nil is a create: "+ tenant: <id>" then every set value. An empty result means no change:
// Diff is empty exactly when the two tenants are equal (nil and empty lists alike).
//
// A member's number is never shown whole: members appear as "Name (…7890)". Long or
// multi-line texts (instructions) show as their length.
func Diff(prev, next *Tenant) []Change {
	d := differ{create: prev == nil}
	if prev == nil {
		prev = &Tenant{}
		d.out = append(d.out, Change{Added, "tenant", next.ID})
	}
	if !d.create {
		d.text("id", prev.ID, next.ID)
	}
	d.text("name", prev.Name, next.Name)
	d.text("language", prev.Language, next.Language)
	d.text("time_zone", prev.TimeZone, next.TimeZone)
	d.text("currency", prev.Currency, next.Currency)
	d.text("audience", string(prev.Audience), string(next.Audience))
	d.list("phone_numbers", numberItems(prev.PhoneNumbers), numberItems(next.PhoneNumbers), true)
	d.list("members", memberItems(prev.Members), memberItems(next.Members), false)
	d.value("sending.per_second", fmtFloat(prev.Sending.PerSecond), fmtFloat(next.Sending.PerSecond))
	d.value("sending.max_concurrent", strconv.Itoa(prev.Sending.MaxConcurrent), strconv.Itoa(next.Sending.MaxConcurrent))
	d.limit("limits.conversation", prev.Limits.Conversation, next.Limits.Conversation)
	d.limit("limits.sender", prev.Limits.Sender, next.Limits.Sender)
	if prev.Limits.API != (APILimit{}) || next.Limits.API != (APILimit{}) {
		// Shown only when a file sets it: the default is the api's configuration.
		pa, na := prev.Limits.API, next.Limits.API
		d.value("limits.api.per_second", fmtOptional(pa.PerSecond, fmtFloat, "API_RATE_PER_KEY"), fmtOptional(na.PerSecond, fmtFloat, "API_RATE_PER_KEY"))
		d.value("limits.api.burst", fmtOptional(pa.Burst, strconv.Itoa, "API_BURST_PER_KEY"), fmtOptional(na.Burst, strconv.Itoa, "API_BURST_PER_KEY"))
	}
	d.value("quota.llm_calls_per_month", fmtQuota(prev.Quota), fmtQuota(next.Quota))
	if prev.Quota.PerSenderPerMonth != nil || next.Quota.PerSenderPerMonth != nil {
		// Shown only when a file sets it: the default follows llm_calls_per_month.
		d.value("quota.per_sender_per_month", fmtShare(prev.Quota), fmtShare(next.Quota))
	}
	d.text("budget.monthly_usd", prev.Budget.MonthlyUSD, next.Budget.MonthlyUSD)
	if prev.Budget.PerSenderShare != nil || next.Budget.PerSenderShare != nil {
		d.value("budget.per_sender_share", fmtOptional(prev.Budget.PerSenderShare, fmtFloat, "0.1"), fmtOptional(next.Budget.PerSenderShare, fmtFloat, "0.1"))
	}
	d.value("alerts", fmtRoles(prev.AlertRoles()), fmtRoles(next.AlertRoles()))
	pa, na := prev.Assistant, next.Assistant
	d.text("assistant.mode", string(pa.Mode), string(na.Mode))
	d.text("assistant.ack_text", pa.AckText, na.AckText)
	d.text("assistant.model", pa.Model, na.Model)
	d.text("assistant.instructions", pa.Instructions, na.Instructions)
	d.value("assistant.min_confidence", fmtFloat(pa.MinConfidence), fmtFloat(na.MinConfidence))
	d.text("assistant.action_url", pa.ActionURL, na.ActionURL)
	if pa.HumanPause != 0 || na.HumanPause != 0 {
		// Shown only when a file sets it, as limits.api.
		d.value("assistant.human_pause", pa.EffectiveHumanPause().String(), na.EffectiveHumanPause().String())
	}
	if pa.MediaLimits != na.MediaLimits {
		pm, nm := pa.MediaLimits.Effective(), na.MediaLimits.Effective()
		d.value("assistant.media_limits", fmt.Sprintf("%+v", pm), fmt.Sprintf("%+v", nm))
	}
	d.list("assistant.intents", intentItems(pa.Intents), intentItems(na.Intents), true)
	d.text("templates.reengage", fmtTemplate(prev.Templates.Reengage), fmtTemplate(next.Templates.Reengage))
	d.text("templates.notify", fmtTemplate(prev.Templates.Notify), fmtTemplate(next.Templates.Notify))
	d.text("templates.common", fmtNames(prev.Templates.Common), fmtNames(next.Templates.Common))
	d.text("templates.max_created", fmtCap(prev.Templates.MaxCreated), fmtCap(next.Templates.MaxCreated))
	return d.out
}

type differ struct {
	out    []Change
	create bool
}

// value compares two rendered values that are never empty (numbers, durations).
func (d *differ) value(path, prev, next string) {
	switch {
	case d.create:
		d.out = append(d.out, Change{Added, path, next})
	case prev != next:
		d.out = append(d.out, Change{Modified, path, prev + " -> " + next})
	}
}

// text compares two texts; empty is "(none)", and long or multi-line texts show as lengths.
func (d *differ) text(path, prev, next string) {
	switch {
	case prev == next && !d.create:
	case d.create && next == "":
	case prev == "" && (next != "" || d.create):
		d.out = append(d.out, Change{Added, path, show(next)})
	case next == "":
		d.out = append(d.out, Change{Removed, path, show(prev)})
	case isLong(prev) || isLong(next):
		d.out = append(d.out, Change{Modified, path, fmt.Sprintf("changed (%d -> %d characters)",
			utf8.RuneCountInString(prev), utf8.RuneCountInString(next))})
	default:
		d.out = append(d.out, Change{Modified, path, show(prev) + " -> " + show(next)})
	}
}

func (d *differ) limit(path string, prev, next Limit) {
	d.value(path+".max", strconv.Itoa(prev.Max), strconv.Itoa(next.Max))
	d.value(path+".per", fmtDuration(prev.Per), fmtDuration(next.Per))
}

// item is one element of a keyed list: its key, how it is shown, and its attributes in order.
type item struct {
	key, label string
	attrs      []attr
}

// attr is an attribute of an item. A text is compared and shown as by differ.text; any
// other value (a field list, a role list) is shown whole.
type attr struct {
	name, value string
	text        bool
}

// list compares keyed lists: additions and changes in next's order, then removals in prev's
// order, then the order itself. showKeys prints the keys in an order change (not for
// members, whose keys are numbers).
func (d *differ) list(path string, prev, next []item, showKeys bool) {
	old := map[string]item{}
	for _, it := range prev {
		old[it.key] = it
	}
	now := map[string]bool{}
	for _, it := range next {
		now[it.key] = true
		was, ok := old[it.key]
		if !ok || d.create {
			d.out = append(d.out, Change{Added, path, it.label})
			continue
		}
		for i, a := range it.attrs {
			p, b := path+"["+it.label+"]."+a.name, was.attrs[i]
			switch {
			case a.text:
				d.text(p, b.value, a.value)
			case a.value != b.value:
				d.out = append(d.out, Change{Modified, p, b.value + " -> " + a.value})
			}
		}
	}
	for _, it := range prev {
		if !now[it.key] {
			d.out = append(d.out, Change{Removed, path, it.label})
		}
	}
	// The order of the items both lists hold, by key (a label changes with a name).
	var po, no []string
	for _, it := range prev {
		if now[it.key] {
			po = append(po, it.key)
		}
	}
	for _, it := range next {
		if _, ok := old[it.key]; ok {
			no = append(no, it.key)
		}
	}
	if !d.create && !slices.Equal(po, no) {
		text := "order changed"
		if showKeys { // the keys are the labels: numbers' ids, intents' names
			text = "order " + strings.Join(po, ", ") + " -> " + strings.Join(no, ", ")
		}
		d.out = append(d.out, Change{Modified, path, text})
	}
}

func numberItems(ps []PhoneNumber) []item {
	out := make([]item, len(ps))
	for i, p := range ps {
		out[i] = item{key: p.PhoneNumberID, label: p.PhoneNumberID, attrs: []attr{{"waba_id", p.WABAID, true}, {"shared", strconv.FormatBool(p.Shared), false}, {"primary", strconv.FormatBool(p.Primary), false}}}
	}
	return out
}

func memberItems(ms []Member) []item {
	out := make([]item, len(ms))
	for i, m := range ms {
		out[i] = item{key: m.WaID + "\x00" + m.UserID, label: MemberLabel(m), attrs: []attr{
			{"name", m.Name, true}, {"role", string(m.Role), true}, {"language", m.Language, true},
		}}
	}
	return out
}

// fmtDefaults shows an intent's defaults as the file writes them: {driver: sender}.
func fmtDefaults(d map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, k+": "+d[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func intentItems(ins []Intent) []item {
	out := make([]item, len(ins))
	for i, in := range ins {
		out[i] = item{key: in.Name, label: in.Name, attrs: []attr{
			{"description", in.Description, true},
			{"fields", in.Fields.String(), false},
			{"required", "[" + strings.Join(in.Required, ", ") + "]", false},
			{"confirm", strconv.FormatBool(in.Confirm), false},
			{"roles", fmtRoles(in.Roles), false},
			{"notify", fmtRoles(in.Notify), false},
			{"defaults", fmtDefaults(in.Defaults), false},
		}}
	}
	return out
}

// fmtRoles shows a role list as the file writes it: [owner, admin]; an empty role as "".
func fmtRoles(rs []Role) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = string(r)
		if r == "" {
			names[i] = `""`
		}
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// MemberLabel shows a member without their full number or id: "Pak Agus (…7890)", or "…7890"
// when the member has no name; a member listed by BSUID alone shows its country and last four
// characters ("US…1918"). Use it wherever an operator sees a member.
func MemberLabel(m Member) string {
	masked := "…" + lastDigits(m.WaID, 4)
	if m.WaID == "" {
		masked = contact.Country(m.UserID) + "…" + lastDigits(m.UserID, 4)
	}
	if m.Name == "" {
		return masked
	}
	return m.Name + " (" + masked + ")"
}

// lastDigits returns the last n characters of s, or nothing when s is not longer than n (a
// short id would be shown whole).
func lastDigits(s string, n int) string {
	if len(s) <= n {
		return ""
	}
	return s[len(s)-n:]
}

const maxShown = 60

func isLong(s string) bool { return strings.Contains(s, "\n") || utf8.RuneCountInString(s) > maxShown }

// show renders a text for a change line.
func show(s string) string {
	switch {
	case s == "":
		return "(none)"
	case isLong(s):
		return fmt.Sprintf("(%d characters)", utf8.RuneCountInString(s))
	default:
		return s
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// fmtDuration drops the zero units Duration.String adds: 5m, not 5m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func fmtQuota(q Quota) string {
	switch {
	case q.LLMCallsPerMonth == nil:
		return "unlimited"
	case *q.LLMCallsPerMonth == 0:
		return "0 (no LLM calls)"
	default:
		return strconv.Itoa(*q.LLMCallsPerMonth)
	}
}

func fmtShare(q Quota) string {
	if q.PerSenderPerMonth == nil {
		n, limited := q.SenderShare()
		if !limited {
			return "default (unlimited)"
		}
		return "default (" + strconv.Itoa(n) + ")"
	}
	return strconv.Itoa(*q.PerSenderPerMonth)
}

// fmtOptional shows a value a file may leave to the api's configuration: its variable then.
func fmtOptional[T any](v *T, format func(T) string, variable string) string {
	if v == nil {
		return "default (" + variable + ")"
	}
	return format(*v)
}

func fmtTemplate(t *Template) string {
	if t == nil {
		return ""
	}
	return t.Name + " (" + t.Language + ")" + fmtComponents(t.Components)
}

// fmtNames renders a list of names for a diff line, each quoted (an empty name shows); "" for none.
func fmtNames(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%q", names)
}

// fmtCap renders a cap that is its default when zero: "" then.
func fmtCap(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
