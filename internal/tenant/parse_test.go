package tenant

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/wapipe/wapipe/internal/contact"
)

func ptr[T any](v T) *T { return &v }

func mustParseFile(t *testing.T, path string) *Tenant {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(%s):\n%v", path, err)
	}
	return tn
}

// contractTenant is testdata/contract.yaml, the contract's example.
func contractTenant() *Tenant {
	return &Tenant{
		ID:       "acme-bus",
		Name:     "Acme Bus",
		Language: "id",
		Audience: AudienceMembers,
		PhoneNumbers: []PhoneNumber{
			{PhoneNumberID: "106540352242922", WABAID: "102290129340398"},
		},
		Members: []Member{
			{WaID: "6281234567890", Role: RoleOwner, Name: "Pak Agus", Language: "id"},
		},
		Sending: Sending{PerSecond: 20, MaxConcurrent: 2},
		Limits: Limits{
			Conversation: Limit{Max: 5, Per: 30 * time.Second},
			Sender:       Limit{Max: 20, Per: 5 * time.Minute},
		},
		Quota: Quota{LLMCallsPerMonth: ptr(1000)},
		Assistant: Assistant{
			Mode:          ModeLLM,
			AckText:       "Thanks, we got your message.",
			Model:         "gemini-2.5-flash",
			Instructions:  "You are the operations assistant of a tour-bus company...\n",
			MinConfidence: 0.7,
			ActionURL:     "https://ops.example.com/wapipe/actions",
			Intents: []Intent{
				{
					Name:        "create_booking",
					Description: "a new booking",
					Fields: Fields{
						{Name: "client", Type: FieldString}, {Name: "date", Type: FieldDate}, {Name: "route", Type: FieldString},
						{Name: "bus", Type: FieldString}, {Name: "price", Type: FieldInteger},
					},
					Required: []string{"client", "date", "bus"},
					Confirm:  true,
					Roles:    []Role{RoleOwner, RoleAdmin},
				},
				{
					Name:        "check_schedule",
					Description: "who drives which bus when",
					Fields:      Fields{{Name: "date", Type: FieldDate}},
				},
			},
		},
		Templates: Templates{Reengage: &Template{Name: "resume_conversation", Language: "id"}},
	}
}

func TestParseContractExample(t *testing.T) {
	t.Parallel()
	got := mustParseFile(t, "testdata/contract.yaml")
	if diff := cmp.Diff(contractTenant(), got); diff != "" {
		t.Errorf("Parse (-want, +got):\n%s", diff)
	}
}

func TestParseFillsDefaults(t *testing.T) {
	t.Parallel()
	want := &Tenant{
		ID:           "acme-bus",
		Name:         "Acme Bus",
		Language:     "id",
		Audience:     AudienceMembers,
		PhoneNumbers: []PhoneNumber{{PhoneNumberID: "106540352242922", WABAID: "102290129340398"}},
		Sending:      Sending{PerSecond: 20, MaxConcurrent: 2},
		Limits: Limits{
			Conversation: Limit{Max: 5, Per: 30 * time.Second},
			Sender:       Limit{Max: 20, Per: 5 * time.Minute},
		},
		Assistant: Assistant{Mode: ModeAck, Model: "gemini-2.5-flash", MinConfidence: 0.7},
	}
	got := mustParseFile(t, "testdata/minimal.yaml")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want, +got):\n%s", diff)
	}
	if _, limited := got.Quota.MonthlyLLMCalls(); limited {
		t.Error("absent quota is limited")
	}
}

func TestParseDefaultsOnlyAbsentFields(t *testing.T) {
	t.Parallel()
	got := mustParseFile(t, "testdata/ack.yaml")
	want := &Tenant{
		ID:       "souk-tours-2",
		Name:     "جولات السوق",
		Language: "ar",
		Audience: AudiencePublic,
		// Unquoted ids are read as the digits they are.
		PhoneNumbers: []PhoneNumber{{PhoneNumberID: "109876543210987", WABAID: "108765432109876"}},
		Members: []Member{
			{WaID: "971501234567", Role: RoleOwner, Name: "Layla"},
			{WaID: "971507654321", Role: RoleMember, Language: "en"}, // role defaulted
		},
		Sending: Sending{PerSecond: 5.5, MaxConcurrent: 2},
		Limits: Limits{
			Conversation: Limit{Max: 5, Per: 30 * time.Second},
			Sender:       Limit{Max: 10, Per: 5 * time.Minute}, // per defaulted alone
		},
		Quota:     Quota{LLMCallsPerMonth: ptr(0)}, // explicit 0 kept apart from absent
		Assistant: Assistant{Mode: ModeAck, Model: "gemini-2.5-flash", MinConfidence: 0.7},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want, +got):\n%s", diff)
	}
	if limit, limited := got.Quota.MonthlyLLMCalls(); !limited || limit != 0 {
		t.Errorf("quota 0: MonthlyLLMCalls = %d, %v; want 0 calls, limited", limit, limited)
	}
}

func TestParseKeepsExplicitMinConfidenceZero(t *testing.T) {
	t.Parallel()
	got, err := Parse([]byte(base + "assistant: {min_confidence: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Assistant.MinConfidence != 0 {
		t.Errorf("min_confidence = %v, want the explicit 0", got.Assistant.MinConfidence)
	}
	// ApplyDefaults, which cannot see the file, fills it.
	got.ApplyDefaults()
	if got.Assistant.MinConfidence != DefaultMinConfidence {
		t.Errorf("after ApplyDefaults min_confidence = %v", got.Assistant.MinConfidence)
	}
}

func TestSampleFilesParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../tenants/sample.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			mustParseFile(t, f)
		})
	}
}

func TestDevstackSample(t *testing.T) {
	t.Parallel()
	tn := mustParseFile(t, "../../tenants/sample.yaml")
	// wapipe trigger's default webhook comes from this number and this sender.
	if got := tn.PhoneNumbers[0].PhoneNumberID; got != "106540352242922" {
		t.Errorf("first number = %s, want the devstack default 106540352242922", got)
	}
	if len(tn.PhoneNumbers) != 2 {
		t.Errorf("%d numbers, want 2", len(tn.PhoneNumbers))
	}
	if tn.Audience != AudiencePublic || tn.Assistant.Mode != ModeLLM {
		t.Errorf("audience %s mode %s, want public llm", tn.Audience, tn.Assistant.Mode)
	}
	for _, name := range []string{"create_booking", "check_schedule"} {
		if _, ok := tn.Intent(name); !ok {
			t.Errorf("no intent %s", name)
		}
	}
	if tn.Assistant.ActionURL != "http://127.0.0.1:8095/wapipe/actions" {
		t.Errorf("action_url = %s", tn.Assistant.ActionURL)
	}
	owner, ok := tn.MemberOf(contact.Identity{WaID: "16505551234"})
	if in, _ := tn.Intent("create_booking"); !ok || !in.AllowedFor(owner.Role) {
		t.Error("the sample sender may not create bookings")
	}
}

// base is a valid file of the required keys, lines 1 to 6; cases append to it or replace
// lines.
const base = `id: acme-bus
name: Acme Bus
language: id
audience: members
phone_numbers:
  - {phone_number_id: "106540352242922", waba_id: "102290129340398"}
`

func repl(old, new string) string {
	if !strings.Contains(base, old) {
		panic("base has no " + old)
	}
	return strings.Replace(base, old, new, 1)
}

const llm = `assistant:
  mode: llm
  action_url: https://ops.example.com/a
  intents:
    - name: create_booking
      description: a new booking
      fields: {client: string, date: date}
      required: [client]
`

func TestParseReportsEachProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want []string
	}{
		// The file itself.
		{"empty file", "", []string{"the file is empty"}},
		{"comments only", "# nothing\n", []string{"the file is empty"}},
		{"two documents", base + "---\nid: other\n", []string{
			"more than one YAML document: a file holds one tenant (line 7)"}},
		{"not a mapping", "- a\n- b\n", []string{
			"must be a mapping with keys id, name, language, currency, time_zone, audience, phone_numbers, members, sending, limits, quota, budget, alerts, assistant, templates (line 1)"}},
		// Shape: unknown and duplicate keys, wrong kinds.
		{"unknown key", base + "colour: red\n", []string{
			"colour: unknown key; the file takes id, name, language, currency, time_zone, audience, phone_numbers, members, sending, limits, quota, budget, alerts, assistant, templates (line 7)"}},
		{"unknown nested key", base + "sending: {per_second: 20, burst: 3}\n", []string{
			"sending.burst: unknown key; sending takes per_second, max_concurrent (line 7)"}},
		{"unknown key in a list item", base + "  - {phone_number_id: \"1\", waba_id: \"2\", token: x}\n", []string{
			"phone_numbers[1].token: unknown key; phone_numbers[1] takes phone_number_id, waba_id, shared, primary (line 7)"}},
		{"key set twice", base + "name: Other\n", []string{"name: set twice (first on line 2) (line 7)"}},
		{"not a number", base + "sending: {per_second: fast}\n", []string{"sending.per_second: must be a number (line 7)"}},
		{"not a whole number", base + "limits: {sender: {max: 2.5}}\n", []string{"limits.sender.max: must be a whole number (line 7)"}},
		{"duration without unit", base + "limits: {sender: {per: 30}}\n", []string{
			"limits.sender.per: must be a duration such as 30s, 5m or 1h (line 7)"}},
		{"bad duration", base + "limits: {conversation: {per: 30 seconds}}\n", []string{
			"limits.conversation.per: must be a duration such as 30s, 5m or 1h (line 7)"}},
		{"not a boolean", base + llm + "      confirm: maybe\n", []string{
			"assistant.intents[0].confirm: must be true or false (line 15)"}},
		{"not a list", repl("phone_numbers:\n  - {phone_number_id: \"106540352242922\", waba_id: \"102290129340398\"}", "phone_numbers: 106540352242922"), []string{
			"phone_numbers: must be a list (line 5)"}},
		{"not a mapping value", base + "sending: 20\n", []string{
			"sending: must be a mapping with keys per_second, max_concurrent (line 7)"}},
		{"list where text expected", repl("name: Acme Bus", "name: [Acme, Bus]"), []string{
			"name: must be a single value (text) (line 2)"}},
		{"fields set twice", base + llm + "      fields: [client]\n", []string{
			"assistant.intents[0].fields: set twice (first on line 13) (line 15)"}},
		{"fields a list", strings.Replace(base+llm, "fields: {client: string, date: date}", "fields: [client, date]", 1), []string{
			"assistant.intents[0].fields: must be a mapping of field name to type, such as {date: date} (line 13)"}},
		{"field listed twice", strings.Replace(base+llm, "{client: string, date: date}", "{client: string, client: date}", 1), []string{
			"assistant.intents[0].fields.client: listed twice (first on line 13) (line 13)"}},
		{"field without type", strings.Replace(base+llm, "{client: string, date: date}", "{client: string, date: }", 1), []string{
			"assistant.intents[0].fields.date: needs a type: one of string, integer, number, boolean, date, time, datetime, money (line 13)"}},

		// Validation, rule by rule.
		{"id missing", strings.Replace(base, "id: acme-bus\n", "", 1), []string{
			"id: required: 3 to 40 characters of a-z, 0-9 and -"}},
		{"id pattern", repl("id: acme-bus", "id: Acme_Bus"), []string{
			"id: must be 3 to 40 characters of a-z, 0-9 and - (line 1)"}},
		{"id too short", repl("id: acme-bus", "id: ab"), []string{
			"id: must be 3 to 40 characters of a-z, 0-9 and - (line 1)"}},
		{"name empty", repl("name: Acme Bus", `name: "  "`), []string{"name: required (line 2)"}},
		{"language unsupported", repl("language: id", "language: de"), []string{
			`language: must be one of en, fr, ar, es, pt, id, not "de" (line 3)`}},
		{"audience", repl("audience: members", "audience: everyone"), []string{
			`audience: must be members or public, not "everyone" (line 4)`}},
		{"audience missing", strings.Replace(base, "audience: members\n", "", 1), []string{
			"audience: required: members or public"}},
		{"no phone numbers", repl(`  - {phone_number_id: "106540352242922", waba_id: "102290129340398"}`+"\n", ""), []string{
			"phone_numbers: required: at least one {phone_number_id, waba_id} (line 5)"}},
		{"empty phone number list", repl("phone_numbers:\n  - {phone_number_id: \"106540352242922\", waba_id: \"102290129340398\"}", "phone_numbers: []"), []string{
			"phone_numbers: required: at least one {phone_number_id, waba_id} (line 5)"}},
		{"phone_number_id not digits", base + `  - {phone_number_id: "+1 555 0100", waba_id: "102290129340398"}` + "\n", []string{
			"phone_numbers[1].phone_number_id: must be digits (the Graph id of the number, not the number itself) (line 7)"}},
		{"phone_number_id missing", base + `  - {waba_id: "102290129340398"}` + "\n", []string{
			"phone_numbers[1].phone_number_id: required (line 7)"}},
		{"waba_id not digits", base + `  - {phone_number_id: "1", waba_id: "waba-1"}` + "\n", []string{
			"phone_numbers[1].waba_id: must be digits (line 7)"}},
		{"duplicate phone_number_id", base + `  - {phone_number_id: "106540352242922", waba_id: "1"}` + "\n", []string{
			"phone_numbers[1].phone_number_id: 106540352242922 is listed twice (also phone_numbers[0]) (line 7)"}},
		{"member wa_id with plus", base + "members:\n  - {wa_id: \"+6281234567890\", role: owner}\n", []string{
			"members[0].wa_id: must be 6 to 15 digits: the number in international form without + or spaces (line 8)"}},
		{"member wa_id too long", base + "members:\n  - {wa_id: \"6281234567890123\"}\n", []string{
			"members[0].wa_id: must be 6 to 15 digits: the number in international form without + or spaces (line 8)"}},
		{"member wa_id and user_id missing", base + "members:\n  - {name: Agus}\n", []string{
			"members[0]: wa_id or user_id required: the member's phone number, or their business-scoped user id (line 8)"}},
		{"member twice", base + "members:\n  - {wa_id: \"6281234567890\"}\n  - {wa_id: \"6281234567890\"}\n", []string{
			"members[1].wa_id: same person as members[0] (line 9)"}},
		{"member user_id twice", base + "members:\n  - {user_id: US.1349120865530}\n  - {wa_id: \"6281234567890\", user_id: US.1349120865530}\n", []string{
			"members[1].user_id: same person as members[0] (line 9)"}},
		{"member user_id not a BSUID", base + "members:\n  - {user_id: \"6281234567890\"}\n", []string{
			`members[0].user_id: must be a business-scoped user id as Meta gives it ("CC." then letters or digits, e.g. US.13491208655302741918), or a parent one ("CC.ENT.…") (line 8)`}},
		{"member role", base + "members:\n  - {wa_id: \"6281234567890\", role: boss}\n", []string{
			`members[0].role: must be owner, admin or member, not "boss" (line 8)`}},
		{"member language", base + "members:\n  - {wa_id: \"6281234567890\", language: jv}\n", []string{
			`members[0].language: must be one of en, fr, ar, es, pt, id, not "jv" (line 8)`}},
		{"per_second zero", base + "sending: {per_second: 0}\n", []string{
			"sending.per_second: must be more than 0 and at most 500 (Cloud Tasks' limit) (line 7)"}},
		{"per_second too high", base + "sending: {per_second: 501}\n", []string{
			"sending.per_second: must be more than 0 and at most 500 (Cloud Tasks' limit) (line 7)"}},
		{"max_concurrent zero", base + "sending: {max_concurrent: 0}\n", []string{"sending.max_concurrent: must be 1 to 1000 (line 7)"}},
		{"max_concurrent too high", base + "sending: {max_concurrent: 1001}\n", []string{"sending.max_concurrent: must be 1 to 1000 (line 7)"}},
		{"limit max zero", base + "limits:\n  conversation: {max: 0}\n", []string{"limits.conversation.max: must be 1 or more (line 8)"}},
		{"limit per negative", base + "limits:\n  sender: {per: -5m}\n", []string{
			"limits.sender.per: must be a positive duration, such as 30s or 5m (line 8)"}},
		{"limit per zero", base + "limits:\n  sender: {per: 0s}\n", []string{
			"limits.sender.per: must be a positive duration, such as 30s or 5m (line 8)"}},
		{"quota negative", base + "quota: {llm_calls_per_month: -1}\n", []string{
			"quota.llm_calls_per_month: must be 0 or more (absent: unlimited) (line 7)"}},
		{"per-sender share zero", base + "quota: {llm_calls_per_month: 100, per_sender_per_month: 0}\n", []string{
			"quota.per_sender_per_month: must be 1 or more (absent: a tenth of llm_calls_per_month, at least 10) (line 7)"}},
		{"currency", base + "currency: rupiah\n", []string{`currency: must be an ISO 4217 code such as IDR, EUR or USD, got "rupiah" (line 7)`}},
		{"time zone", base + "time_zone: Bali/Denpasar\n", []string{`time_zone: must be an IANA time zone such as Asia/Makassar or Europe/Paris, got "Bali/Denpasar" (line 7)`}},
		{"budget not money", base + "budget: {monthly_usd: fifty}\n", []string{`budget.monthly_usd: must be an amount of US dollars like 50 or 12.50, got "fifty" (line 7)`}},
		{"budget share over one", base + "budget: {monthly_usd: \"50\", per_sender_share: 1.5}\n", []string{"budget.per_sender_share: must be a fraction above 0 and at most 1 (absent: 0.1) (line 7)"}},
		{"alert role", base + "alerts: [owner, boss]\n", []string{`alerts[1]: must be owner, admin or member, got "boss" (line 7)`}},
		{"media limits", base + "assistant: {media_limits: {audio_seconds: -1}}\n", []string{"assistant.media_limits: must be positive numbers (absent: 600 s of audio, 120 s of video, 50 pages, 5242880 bytes of image) (line 7)"}},
		{"mode", base + "assistant: {mode: chat}\n", []string{`assistant.mode: must be ack or llm, not "chat" (line 7)`}},
		{"mode empty", base + "assistant: {mode: \"\"}\n", []string{`assistant.mode: must be ack or llm, not "" (line 7)`}},
		{"model", base + "assistant: {model: ../../x}\n", []string{"assistant.model: must be a model name such as gemini-2.5-flash (line 7)"}},
		{"min_confidence", base + "assistant: {min_confidence: 1.5}\n", []string{"assistant.min_confidence: must be between 0 and 1 (line 7)"}},
		{"ack_text too long", base + "assistant: {ack_text: " + strings.Repeat("a", 4097) + "}\n", []string{
			"assistant.ack_text: is 4097 characters; WhatsApp allows 4096 (line 7)"}},
		{"intents need action_url", strings.Replace(base+llm, "  action_url: https://ops.example.com/a\n", "", 1), []string{
			"assistant.action_url: required in llm mode when there are intents: every intent calls it (line 7)"}},
		{"action_url plain http", strings.Replace(base+llm, "https://ops.example.com/a", "http://ops.example.com/a", 1), []string{
			"assistant.action_url: must be an absolute https:// URL (http:// only to a loopback host such as 127.0.0.1, with APP_ENV=dev) (line 9)"}},
		{"action_url relative", strings.Replace(base+llm, "https://ops.example.com/a", "/wapipe/actions", 1), []string{
			"assistant.action_url: must be an absolute https:// URL (http:// only to a loopback host such as 127.0.0.1, with APP_ENV=dev) (line 9)"}},
		{"action_url other scheme", strings.Replace(base+llm, "https://ops.example.com/a", "ftp://ops.example.com/a", 1), []string{
			"assistant.action_url: must be an absolute https:// URL (http:// only to a loopback host such as 127.0.0.1, with APP_ENV=dev) (line 9)"}},
		{"action_url with credentials", strings.Replace(base+llm, "https://ops.example.com/a", "https://u:p@ops.example.com/a", 1), []string{
			"assistant.action_url: must not carry a user or password: wapipe signs each call with the action secret (line 9)"}},
		{"intent name", strings.Replace(base+llm, "name: create_booking", "name: Create-Booking", 1), []string{
			"assistant.intents[0].name: must be a lower-case word of a-z, 0-9 and _ starting with a letter, at most 64 characters (line 11)"}},
		{"intent general_query", strings.Replace(base+llm, "name: create_booking", "name: general_query", 1), []string{
			"assistant.intents[0].name: general_query is built in; choose another name (line 11)"}},
		{"intent twice", base + llm + "    - {name: create_booking, description: again}\n", []string{
			"assistant.intents[1].name: create_booking is listed twice (also assistant.intents[0]) (line 15)"}},
		{"intent description", strings.Replace(base+llm, "      description: a new booking\n", "", 1), []string{
			"assistant.intents[0].description: required: it tells the model when the intent applies (line 11)"}},
		{"field type", strings.Replace(base+llm, "date: date}", "date: amount}", 1), []string{
			`assistant.intents[0].fields.date: unknown type "amount": one of string, integer, number, boolean, date, time, datetime, money (line 13)`}},
		{"field name", strings.Replace(base+llm, "{client: string,", "{Client Name: string,", 1) + "", []string{
			"assistant.intents[0].fields.Client Name: a field name must be a lower-case word of a-z, 0-9 and _ starting with a letter (line 13)",
			`assistant.intents[0].required[0]: "client" is not one of the intent's fields (line 14)`}},
		{"required not a field", strings.Replace(base+llm, "required: [client]", "required: [client, bus]", 1), []string{
			`assistant.intents[0].required[1]: "bus" is not one of the intent's fields (line 14)`}},
		{"required twice", strings.Replace(base+llm, "required: [client]", "required: [client, client]", 1), []string{
			"assistant.intents[0].required[1]: client is listed twice (line 14)"}},
		{"intent role", base + llm + "      roles: [owner, driver]\n", []string{
			`assistant.intents[0].roles[1]: must be owner, admin or member, not "driver" (line 15)`}},
		{"template name missing", base + "templates:\n  reengage: {language: id}\n", []string{
			"templates.reengage.name: required: the approved template's name (line 8)"}},
		{"template name", base + "templates:\n  reengage: {name: Resume Conversation, language: id}\n", []string{
			"templates.reengage.name: must be a template name: lower-case letters, digits and _ (line 8)"}},
		{"template language missing", base + "templates:\n  reengage: {name: resume}\n", []string{
			"templates.reengage.language: required: the template's language code, such as id or en_US (line 8)"}},
		{"template language", base + "templates:\n  reengage: {name: resume, language: english}\n", []string{
			"templates.reengage.language: must be a template language code, such as id or en_US (line 8)"}},

		// Several problems: all of them, one a line, in file order.
		{"several problems", `id: X
name: ""
language: de
audience: members
phone_numbers:
  - {phone_number_id: abc, waba_id: "1"}
  - {phone_number_id: abc, waba_id: x}
sending: {per_second: 0}
`, []string{
			"id: must be 3 to 40 characters of a-z, 0-9 and - (line 1)",
			"name: required (line 2)",
			`language: must be one of en, fr, ar, es, pt, id, not "de" (line 3)`,
			"phone_numbers[0].phone_number_id: must be digits (the Graph id of the number, not the number itself) (line 6)",
			"phone_numbers[1].phone_number_id: must be digits (the Graph id of the number, not the number itself) (line 7)",
			"phone_numbers[1].waba_id: must be digits (line 7)",
			"sending.per_second: must be more than 0 and at most 500 (Cloud Tasks' limit) (line 8)",
		}},
		{"several shape problems", base + "sending: {per_second: x, max_concurrent: y}\ncolour: red\n", []string{
			"sending.per_second: must be a number (line 7)",
			"sending.max_concurrent: must be a whole number (line 7)",
			"colour: unknown key; the file takes id, name, language, currency, time_zone, audience, phone_numbers, members, sending, limits, quota, budget, alerts, assistant, templates (line 8)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.file))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", got)
			}
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("error is %T, not Problems: %v", err, err)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("problems (-want, +got):\n%s", diff)
			}
			if len(ps) != len(tt.want) {
				t.Errorf("%d Problems, %d lines", len(ps), len(tt.want))
			}
		})
	}
}

func TestParseSyntaxError(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte("id: [acme\n"))
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.HasPrefix(ps[0].Message, "not valid YAML: ") {
		t.Errorf("err = %v, want one 'not valid YAML' problem", err)
	}
}

func TestParseAcceptsGoodVariants(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, file string }{
		{"http loopback action_url", strings.Replace(base+llm, "https://ops.example.com/a", "http://127.0.0.1:8095/wapipe/actions", 1)},
		{"http localhost action_url", strings.Replace(base+llm, "https://ops.example.com/a", "http://localhost:8095/a", 1)},
		{"http ipv6 loopback action_url", strings.Replace(base+llm, "https://ops.example.com/a", "http://[::1]:8095/a", 1)},
		{"ack mode intents without action_url", strings.Replace(strings.Replace(base+llm, "  action_url: https://ops.example.com/a\n", "", 1), "mode: llm", "mode: ack", 1)},
		{"llm without intents needs no action_url", base + "assistant: {mode: llm}\n"},
		{"every field type", base + llm + "    - {name: trip, description: d, fields: {a: string, b: integer, c: number, d: boolean, e: date, f: time, g: datetime}}\n"},
		{"anchors", base + "limits:\n  conversation: &l {max: 3, per: 10s}\n  sender: *l\n"},
		{"null sections", base + "members:\nsending:\nassistant:\n"},
		{"template with region", base + "templates:\n  reengage: {name: resume_conversation, language: en_US}\n"},
		{"min_confidence bounds", base + "assistant: {min_confidence: 1}\n"},
		{"max rate", base + "sending: {per_second: 500, max_concurrent: 1000}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Parse([]byte(tt.file)); err != nil {
				t.Errorf("Parse:\n%v", err)
			}
		})
	}
}

func TestValidateWithoutFileHasNoLines(t *testing.T) {
	t.Parallel()
	tn := contractTenant()
	tn.Sending.PerSecond = 0
	tn.Members[0].WaID = "+62812"
	err := tn.Validate()
	want := []string{
		"members[0].wa_id: must be 6 to 15 digits: the number in international form without + or spaces",
		"sending.per_second: must be more than 0 and at most 500 (Cloud Tasks' limit)",
	}
	if err == nil {
		t.Fatal("Validate = nil")
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("(-want, +got):\n%s", diff)
	}
	if err := contractTenant().Validate(); err != nil {
		t.Errorf("Validate(contract) = %v", err)
	}
}

func TestProblemsNeverEchoAMemberNumber(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(base + "members:\n  - {wa_id: \"+6281234567890\"}\n  - {wa_id: \"6281299999999\"}\n  - {wa_id: \"6281299999999\"}\n"))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	for _, n := range []string{"6281234567890", "6281299999999"} {
		if strings.Contains(err.Error(), n) {
			t.Errorf("error shows %s:\n%v", n, err)
		}
	}
}

func TestCheckNumberOwners(t *testing.T) {
	t.Parallel()
	tn := mustParseFile(t, "../../tenants/sample.yaml")
	owned := func(id string) NumberUse { return NumberUse{TenantIDs: []string{id}} }
	owners := map[string]NumberUse{
		"106540352242922": owned("sunrise-bus"), // its own: fine
		"106540352242923": owned("acme-bus"),
		"999":             owned("other"),
	}
	err := CheckNumbers(tn, owners)
	want := "phone_numbers[1].phone_number_id: 106540352242923 already belongs to tenant acme-bus"
	if err == nil || err.Error() != want {
		t.Errorf("CheckNumbers = %v, want %q", err, want)
	}
	if err := CheckNumbers(tn, map[string]NumberUse{"106540352242922": owned("sunrise-bus")}); err != nil {
		t.Errorf("own numbers: %v", err)
	}
	if err := CheckNumbers(tn, nil); err != nil {
		t.Errorf("no owners: %v", err)
	}
}

// TestTagsMatch checks that every field's firestore name is its YAML name, so a stored tenant
// reads like its file.
func TestTagsMatch(t *testing.T) {
	t.Parallel()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeFor[Tenant]().PkgPath() {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fs, _, _ := strings.Cut(f.Tag.Get("firestore"), ",")
			if y == "" || y != fs {
				t.Errorf("%s.%s: yaml %q, firestore %q", typ.Name(), f.Name, y, fs)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Tenant]())
}

func TestParseRefusesHugeInputs(t *testing.T) {
	t.Parallel()
	// Aliases multiply: 2000 intents, each an alias of one with 2000 required fields.
	var b strings.Builder
	b.WriteString(base + "x: &r [" + strings.Repeat("a, ", 1999) + "a]\n")
	b.WriteString("assistant:\n  intents:\n    - &i {name: a, description: d, required: *r}\n")
	b.WriteString(strings.Repeat("    - *i\n", 1999))
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too many values") {
		t.Errorf("Parse(aliases) = %.300v", err)
	}
	if _, err := Parse(make([]byte, MaxFileSize+1)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("Parse(too big) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base + llm))
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := Parse(data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error is not Problems: %v", err)
			}
			return
		}
		// A parsed tenant is valid, and writes back to itself.
		if err := tn.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid tenant:\n%v", err)
		}
		out, err := Marshal(tn)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal) failed:\n%v\n%s", err, out)
		}
		if d := Diff(tn, again); len(d) != 0 {
			t.Fatalf("round trip changed %v", d)
		}
	})
}

// TestQuotaSenderShare: one contact's monthly share of the LLM calls (issue 22): the file's
// per_sender_per_month, else a tenth of llm_calls_per_month and at least 10, else none.
func TestQuotaSenderShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		quota       Quota
		want        int
		wantLimited bool
	}{
		{"no quota: no share", Quota{}, 0, false},
		{"a tenth of the quota", Quota{LLMCallsPerMonth: ptr(1000)}, 100, true},
		{"at least 10", Quota{LLMCallsPerMonth: ptr(50)}, 10, true},
		{"quota 0: the quota refuses first", Quota{LLMCallsPerMonth: ptr(0)}, 10, true},
		{"set in the file", Quota{LLMCallsPerMonth: ptr(1000), PerSenderPerMonth: ptr(3)}, 3, true},
		{"set without a quota", Quota{PerSenderPerMonth: ptr(25)}, 25, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, limited := tt.quota.SenderShare()
			if got != tt.want || limited != tt.wantLimited {
				t.Errorf("SenderShare() = %d, %v; want %d, %v", got, limited, tt.want, tt.wantLimited)
			}
		})
	}
	tn, err := Parse([]byte("id: acme-bus\nname: Acme\nlanguage: en\naudience: public\n" +
		"phone_numbers: [{phone_number_id: \"1\", waba_id: \"2\"}]\nquota: {llm_calls_per_month: 300, per_sender_per_month: 7}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if n, limited := tn.Quota.SenderShare(); n != 7 || !limited {
		t.Errorf("parsed per_sender_per_month: SenderShare() = %d, %v; want 7, true", n, limited)
	}
}
