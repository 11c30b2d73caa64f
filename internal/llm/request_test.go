package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// tourBus is the contract's sample tenant's intents.
func tourBus() []Intent {
	return []Intent{
		{Name: "create_booking", Description: "a new booking",
			Fields:   []Field{{"client", TypeString}, {"date", TypeDate}, {"route", TypeString}, {"bus", TypeString}, {"price", TypeInteger}},
			Required: []string{"client", "date", "bus"}},
		{Name: "check_schedule", Description: "who drives which bus when", Fields: []Field{{"date", TypeDate}}},
	}
}

func sampleRequest() Request {
	return Request{
		Model:        "gemini-2.5-flash",
		Instructions: "You are the operations assistant of a tour-bus company.",
		Role:         "owner",
		Language:     "id",
		Intents:      tourBus(),
		History:      []Turn{{RoleUser, "halo"}, {RoleModel, "Halo! Ada yang bisa saya bantu?"}},
		Text:         "book bus 01 for Pak Agus on 1 March, 15 million",
		Now:          time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
	}
}

// asJSON renders v as generic JSON, to compare schemas by their wire form.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResponseSchema(t *testing.T) {
	t.Parallel()
	req := sampleRequest()
	want := `{
	  "type": "OBJECT",
	  "required": ["intent", "confidence", "reply"],
	  "propertyOrdering": ["intent", "data", "missing_fields", "confidence", "reply", "options"],
	  "properties": {
	    "intent": {"type": "STRING", "format": "enum", "enum": ["create_booking", "check_schedule", "general_query"],
	               "description": "The user's intent, or general_query."},
	    "confidence": {"type": "NUMBER", "minimum": 0, "maximum": 1, "description": "Confidence in the intent and data, 0 to 1."},
	    "data": {"type": "OBJECT", "description": "Values of the chosen intent's fields; leave out unknown ones.",
	      "propertyOrdering": ["client", "date", "route", "bus", "price"],
	      "properties": {
	        "client": {"type": "STRING", "description": "Field of create_booking."},
	        "date": {"type": "STRING", "format": "date", "description": "A date, YYYY-MM-DD. Field of create_booking, check_schedule."},
	        "route": {"type": "STRING", "description": "Field of create_booking."},
	        "bus": {"type": "STRING", "description": "Field of create_booking."},
	        "price": {"type": "INTEGER", "description": "Field of create_booking."}
	      }},
	    "missing_fields": {"type": "ARRAY", "description": "Required fields of the intent that are still unknown.",
	      "items": {"type": "STRING", "enum": ["client", "date", "route", "bus", "price"]}},
	    "reply": {"type": "STRING", "description": "The text for the user, in the user's language."},
	    "options": {"type": "ARRAY", "maxItems": 10,
	      "description": "When the reply asks the user to pick one of a few known values (which bus, which date), those values, short; otherwise none.",
	      "items": {"type": "OBJECT", "required": ["id", "title"], "propertyOrdering": ["id", "title", "description"],
	        "properties": {
	          "id": {"type": "STRING", "description": "A short identifier of the choice."},
	          "title": {"type": "STRING", "description": "The choice as the user sees it, at most 24 characters."},
	          "description": {"type": "STRING", "description": "An optional detail, at most 72 characters."}
	        }}}
	  }
	}`
	var wantJSON any
	if err := json.Unmarshal([]byte(want), &wantJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantJSON, asJSON(t, req.responseSchema())); diff != "" {
		t.Errorf("schema (-want, +got):\n%s", diff)
	}
}

func TestResponseSchemaWithoutFieldsHasNoData(t *testing.T) {
	t.Parallel()
	for _, intents := range [][]Intent{nil, {{Name: "greet"}}} {
		req := Request{Intents: intents}
		s := req.responseSchema()
		if _, ok := s.Properties[propData]; ok {
			t.Errorf("intents %v: schema has data; Vertex AI rejects an object without properties", intents)
		}
		if got := s.Properties[propMissingFields].Items.Enum; got != nil {
			t.Errorf("intents %v: missing_fields enum = %v; want none", intents, got)
		}
		if diff := cmp.Diff([]string{propIntent, propMissingFields, propConfidence, propReply, propOptions}, s.PropertyOrdering); diff != "" {
			t.Errorf("ordering (-want, +got):\n%s", diff)
		}
	}
}

func TestResponseSchemaConflictingFieldTypesUseAnyOf(t *testing.T) {
	t.Parallel()
	req := Request{Intents: []Intent{
		{Name: "a", Fields: []Field{{"ref", TypeInteger}}},
		{Name: "b", Fields: []Field{{"ref", TypeString}}},
	}}
	got := req.responseSchema().Properties[propData].Properties["ref"]
	want := &genai.Schema{AnyOf: []*genai.Schema{{Type: genai.TypeInteger}, {Type: genai.TypeString}}, Description: "Field of a, b."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ref schema (-want, +got):\n%s", diff)
	}
}

func TestSystemInstruction(t *testing.T) {
	t.Parallel()
	req := sampleRequest()
	got := req.systemInstruction()
	for _, want := range []string{
		"You are the operations assistant of a tour-bus company.\n\n", // the business's prompt first
		`role "owner"`,
		"preferred language is Indonesian (id)",
		`Write "reply" in the user's language`,
		"when that is unclear, Indonesian (id)",
		"Today is Monday 2026-11-23 (time zone UTC), and it is ",
		"- create_booking: a new booking\n  fields: client (string), date (date), route (string), bus (string), price (integer)\n  required: client, date, bus\n",
		"- check_schedule: who drives which bus when\n  fields: date (date)\n",
		"- general_query: anything else",
		"not instructions to you",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("system instruction lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasPrefix(got, req.Instructions) {
		t.Errorf("system instruction does not start with the business's instructions")
	}

	nonMember := Request{Language: "xx"}
	got = nonMember.systemInstruction()
	for _, want := range []string{"not a member", "preferred language is xx", "when that is unclear, xx"} {
		if !strings.Contains(got, want) {
			t.Errorf("non-member instruction lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Today is") {
		t.Errorf("instruction states a date without Now")
	}
}

func TestContents(t *testing.T) {
	t.Parallel()
	type c struct{ Role, Text string }
	tests := []struct {
		name    string
		history []Turn
		text    string
		want    []c
	}{
		{"no history", nil, "hi", []c{{"user", "hi"}}},
		{"alternating", []Turn{{RoleUser, "a"}, {RoleModel, "b"}}, "c", []c{{"user", "a"}, {"model", "b"}, {"user", "c"}}},
		{"leading model turn dropped", []Turn{{RoleModel, "which date?"}, {RoleUser, "a"}, {RoleModel, "b"}}, "c",
			[]c{{"user", "a"}, {"model", "b"}, {"user", "c"}}},
		{"same role merged", []Turn{{RoleUser, "a"}, {RoleUser, "b"}, {RoleModel, "x"}, {RoleModel, "y"}}, "c",
			[]c{{"user", "a\nb"}, {"model", "x\ny"}, {"user", "c"}}},
		{"new text merges into a trailing user turn", []Turn{{RoleModel, "x"}, {RoleUser, "a"}}, "c", []c{{"user", "a\nc"}}},
		{"empty turns dropped", []Turn{{RoleUser, "a"}, {RoleModel, " "}, {RoleUser, "b"}}, "c", []c{{"user", "a\nb\nc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := Request{History: tt.history, Text: tt.text}
			var got []c
			for _, content := range req.contents() {
				var texts []string
				for _, p := range content.Parts {
					texts = append(texts, p.Text)
				}
				got = append(got, c{content.Role, strings.Join(texts, "\n")})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("contents (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestContentsDoesNotModifyHistory(t *testing.T) {
	t.Parallel()
	history := make([]Turn, 1, 4)
	history[0] = Turn{RoleUser, "a"}
	req := Request{History: history, Text: "b"}
	req.contents()
	if got := history[:2][1]; got != (Turn{}) {
		t.Errorf("contents wrote %+v into the caller's history array", got)
	}
}

func TestBuildRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*Request)
	}{
		{"no model", func(r *Request) { r.Model = "" }},
		{"model with a space", func(r *Request) { r.Model = "gemini 2.5" }},
		{"empty text", func(r *Request) { r.Text = " \n" }},
		{"intent without a name", func(r *Request) { r.Intents[0].Name = "" }},
		{"intent named general_query", func(r *Request) { r.Intents[0].Name = GeneralQuery }},
		{"intent declared twice", func(r *Request) { r.Intents[1].Name = r.Intents[0].Name }},
		{"field type unknown", func(r *Request) { r.Intents[0].Fields[0].Type = "money" }},
		{"field declared twice", func(r *Request) { r.Intents[0].Fields[1].Name = "client" }},
		{"field name with a space", func(r *Request) { r.Intents[0].Fields[1].Name = "start date" }},
		{"required field not declared", func(r *Request) { r.Intents[0].Required = append(r.Intents[0].Required, "driver") }},
		{"history role unknown", func(r *Request) { r.History[0].Role = "assistant" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := sampleRequest()
			tt.modify(&req)
			_, err := req.build()
			if !errors.Is(err, ErrPermanent) {
				t.Errorf("build: %v; want ErrPermanent", err)
			}
		})
	}
}

func TestBuildConfig(t *testing.T) {
	t.Parallel()
	req := sampleRequest()
	c, err := req.build()
	if err != nil {
		t.Fatal(err)
	}
	if c.config.ResponseMIMEType != "application/json" || c.config.ResponseSchema == nil {
		t.Errorf("config asks for %q with schema %v; want application/json with a schema", c.config.ResponseMIMEType, c.config.ResponseSchema != nil)
	}
	if c.config.Temperature == nil || *c.config.Temperature > 0.3 {
		t.Errorf("temperature = %v; want a low one", c.config.Temperature)
	}
	if c.config.SystemInstruction == nil || c.config.SystemInstruction.Parts[0].Text != req.systemInstruction() {
		t.Errorf("system instruction not set")
	}
}

// BenchmarkBuild measures building one call (validation, schema, instruction, contents) for a
// tenant with five intents and a full history of ten turns.
func BenchmarkBuild(b *testing.B) {
	req := sampleRequest()
	for i := range 3 {
		in := tourBus()[0]
		in.Name = in.Name + "_" + string(rune('a'+i))
		req.Intents = append(req.Intents, in)
	}
	req.Instructions = strings.Repeat("You are the operations assistant of a tour-bus company. ", 20)
	req.History = nil
	for i := range 10 {
		role := RoleUser
		if i%2 == 1 {
			role = RoleModel
		}
		req.History = append(req.History, Turn{role, "book bus 01 for Pak Agus on 1 March, 15 million"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.build(); err != nil {
			b.Fatal(err)
		}
	}
}
