package llm

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Result
	}{
		{
			name: "complete booking",
			text: `{"intent":"create_booking","confidence":0.95,"data":{"client":"Pak Agus","date":"2027-03-01","bus":"01","price":15000000},"missing_fields":[],"reply":"Correct?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.95, Reply: "Correct?",
				Data: map[string]any{"client": "Pak Agus", "date": "2027-03-01", "bus": "01", "price": int64(15000000)}},
		},
		{
			name: "required fields the model forgot to list are missing",
			text: `{"intent":"create_booking","confidence":0.8,"data":{"bus":"01"},"reply":"Who for?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.8, Reply: "Who for?",
				Data: map[string]any{"bus": "01"}, MissingFields: []string{"client", "date"}},
		},
		{
			name: "the model's missing fields are kept, unknown names dropped, in field order",
			text: `{"intent":"create_booking","confidence":0.8,"data":{"bus":"01","client":"A","date":"2027-03-01"},"missing_fields":["price","driver","route"],"reply":"Price?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.8, Reply: "Price?",
				Data: map[string]any{"bus": "01", "client": "A", "date": "2027-03-01"}, MissingFields: []string{"route", "price"}},
		},
		{
			name: "options kept, those without an id or a title dropped",
			text: `{"intent":"general_query","confidence":0.9,"reply":"Which bus?","options":[{"id":"b1","title":"Bus 01","description":"Hiace"},{"id":"","title":"x"},{"id":"b2","title":" "},{"id":"b3","title":"Bus 03"}]}`,
			want: Result{Intent: "general_query", Confidence: 0.9, Reply: "Which bus?", Data: map[string]any{},
				Options: []Option{{ID: "b1", Title: "Bus 01", Description: "Hiace"}, {ID: "b3", Title: "Bus 03"}}},
		},
		{
			name: "unknown and other intents' keys dropped",
			text: `{"intent":"check_schedule","confidence":1,"data":{"date":"2027-03-01","bus":"01","secret":"x"},"reply":"ok"}`,
			want: Result{Intent: "check_schedule", Confidence: 1, Reply: "ok", Data: map[string]any{"date": "2027-03-01"}},
		},
		{
			name: "general query carries no data",
			text: `{"intent":"general_query","confidence":0,"data":{"date":"2027-03-01"},"missing_fields":["date"],"reply":"Hello"}`,
			want: Result{Intent: GeneralQuery, Confidence: 0, Reply: "Hello", Data: map[string]any{}},
		},
		{
			name: "null and blank values count as absent",
			text: `{"intent":"create_booking","confidence":0.9,"data":{"client":"  ","date":null,"bus":"01","price":null},"reply":"?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.9, Reply: "?",
				Data: map[string]any{"bus": "01"}, MissingFields: []string{"client", "date"}},
		},
		{
			name: "null data and missing_fields",
			text: `{"intent":"check_schedule","confidence":0.5,"data":null,"missing_fields":null,"reply":"?"}`,
			want: Result{Intent: "check_schedule", Confidence: 0.5, Reply: "?", Data: map[string]any{}},
		},
		{
			name: "integer coercions: decimal string, integral float",
			text: `{"intent":"create_booking","confidence":0.9,"data":{"client":"A","date":"2027-03-01","bus":"01","price":"15000000"},"reply":"?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.9, Reply: "?",
				Data: map[string]any{"client": "A", "date": "2027-03-01", "bus": "01", "price": int64(15000000)}},
		},
		{
			name: "integer from exponent form",
			text: `{"intent":"create_booking","confidence":0.9,"data":{"client":"A","date":"2027-03-01","bus":"01","price":1.5e7},"reply":"?"}`,
			want: Result{Intent: "create_booking", Confidence: 0.9, Reply: "?",
				Data: map[string]any{"client": "A", "date": "2027-03-01", "bus": "01", "price": int64(15000000)}},
		},
		{
			name: "confidence as a numeric string",
			text: `{"intent":"general_query","confidence":"0.6","reply":"hi"}`,
			want: Result{Intent: GeneralQuery, Confidence: 0.6, Reply: "hi", Data: map[string]any{}},
		},
		{
			name: "surrounding whitespace is fine",
			text: "\n {\"intent\":\"general_query\",\"confidence\":0.7,\"reply\":\"hi\"} \n",
			want: Result{Intent: GeneralQuery, Confidence: 0.7, Reply: "hi", Data: map[string]any{}},
		},
	}
	req := sampleRequest()
	c, err := req.build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.parseAnswer(tt.text)
			if err != nil {
				t.Fatalf("parseAnswer: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want, +got):\n%s", diff)
			}
		})
	}
}

func TestParseAnswerRejects(t *testing.T) {
	t.Parallel()
	const secret = "Pak Agus"
	tests := []struct {
		name string
		text string
	}{
		{"not JSON", "Sure! I'll book bus 01 for " + secret},
		{"JSON in a code fence", "```json\n{\"intent\":\"general_query\",\"confidence\":1,\"reply\":\"hi\"}\n```"},
		{"truncated", `{"intent":"create_booking","confidence":0.9,"reply":"` + secret},
		{"trailing data", `{"intent":"general_query","confidence":1,"reply":"hi"} {"x":1}`},
		{"an array", `[{"intent":"general_query","confidence":1,"reply":"hi"}]`},
		{"no intent", `{"confidence":1,"reply":"hi"}`},
		{"intent not offered", `{"intent":"cancel_booking","confidence":1,"reply":"hi"}`},
		{"intent holds the message", `{"intent":"book for ` + secret + `","confidence":1,"reply":"hi"}`},
		{"intent not a string", `{"intent":3,"confidence":1,"reply":"hi"}`},
		{"no confidence", `{"intent":"general_query","reply":"hi"}`},
		{"confidence above 1", `{"intent":"general_query","confidence":1.5,"reply":"hi"}`},
		{"confidence below 0", `{"intent":"general_query","confidence":-0.1,"reply":"hi"}`},
		{"confidence a word", `{"intent":"general_query","confidence":"` + secret + `","reply":"hi"}`},
		{"reply not a string", `{"intent":"general_query","confidence":1,"reply":{"text":"` + secret + `"}}`},
		{"no reply", `{"intent":"general_query","confidence":1}`},
		{"blank reply", `{"intent":"general_query","confidence":1,"reply":"  "}`},
		{"data not an object", `{"intent":"create_booking","confidence":1,"data":["` + secret + `"],"reply":"hi"}`},
		{"integer with separators", `{"intent":"create_booking","confidence":1,"data":{"price":"15.000.000"},"reply":"hi"}`},
		{"integer with a unit", `{"intent":"create_booking","confidence":1,"data":{"price":"15 juta"},"reply":"hi"}`},
		{"integer with a fraction", `{"intent":"create_booking","confidence":1,"data":{"price":1.5},"reply":"hi"}`},
		{"integer out of range", `{"intent":"create_booking","confidence":1,"data":{"price":1e30},"reply":"hi"}`},
		{"date in words", `{"intent":"create_booking","confidence":1,"data":{"date":"1 March"},"reply":"hi"}`},
		{"date impossible", `{"intent":"create_booking","confidence":1,"data":{"date":"2027-02-30"},"reply":"hi"}`},
		{"date a number", `{"intent":"create_booking","confidence":1,"data":{"date":20270301},"reply":"hi"}`},
		{"string a number", `{"intent":"create_booking","confidence":1,"data":{"bus":1},"reply":"hi"}`},
		{"string an object", `{"intent":"create_booking","confidence":1,"data":{"client":{"name":"` + secret + `"}},"reply":"hi"}`},
		{"missing_fields not strings", `{"intent":"create_booking","confidence":1,"missing_fields":[1],"reply":"hi"}`},
		{"missing_fields holds null", `{"intent":"create_booking","confidence":1,"missing_fields":[null],"reply":"hi"}`},
	}
	req := sampleRequest()
	c, err := req.build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.parseAnswer(tt.text)
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("parseAnswer = %+v, %v; want ErrInvalidResponse", got, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q quotes the answer", err)
			}
		})
	}
}

func TestFieldValueTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ, raw string
		want     any
		present  bool
		wantErr  bool
	}{
		{TypeNumber, `1.25`, 1.25, true, false},
		{TypeNumber, `"2.5"`, 2.5, true, false},
		{TypeNumber, `"NaN"`, nil, false, true},
		{TypeNumber, `"Inf"`, nil, false, true},
		{TypeNumber, `true`, nil, false, true},
		{TypeBoolean, `true`, true, true, false},
		{TypeBoolean, `"true"`, nil, false, true},
		{TypeInteger, `-7`, int64(-7), true, false},
		{TypeInteger, `" 42 "`, int64(42), true, false},
		{TypeDate, `" 2027-03-01 "`, "2027-03-01", true, false},
		{TypeString, `""`, "", false, false},
	}
	for _, tt := range tests {
		got, present, err := fieldValue(tt.typ, []byte(tt.raw))
		if (err != nil) != tt.wantErr || present != tt.present || (present && got != tt.want) {
			t.Errorf("fieldValue(%s, %s) = %v, %v, %v; want %v, %v, error %v", tt.typ, tt.raw, got, present, err, tt.want, tt.present, tt.wantErr)
		}
	}
}
