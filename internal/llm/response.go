package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Result is the model's validated answer for one turn (the contract's answer object) and
// what the call cost.
type Result struct {
	// Intent is one of the request's intent names or GeneralQuery.
	Intent string
	// Confidence is within [0, 1].
	Confidence float64
	// Data holds the chosen intent's fields that are known, never nil. Values have Go types
	// by field type: string and date → string ("YYYY-MM-DD" for dates), integer → int64,
	// number → float64, boolean → bool. Always empty for GeneralQuery. Keys the intent does
	// not declare are dropped.
	//
	// A value of the wrong type fails the whole answer (ErrInvalidResponse), with these
	// coercions, because a model sometimes quotes numbers: an integer field accepts a JSON
	// number with an integral value (15000000, 1.5e7) or a string of decimal digits with an
	// optional sign ("15000000"); a number field accepts a JSON number or a string that
	// strconv.ParseFloat reads as a finite number; confidence accepts a numeric string.
	// Strings with separators or units ("15.000.000", "15 juta") are rejected. A null value,
	// and a string or date of only spaces, counts as absent.
	Data map[string]any
	// MissingFields names the chosen intent's fields still needed: the model's list (limited
	// to the intent's fields) together with every required field absent from Data, in the
	// intent's field order.
	MissingFields []string
	// Reply is the text for the user; never empty.
	Reply string
	// Options are the choices the reply offers, when the model gave any: at most MaxOptions,
	// each with an id and a title (entries without either are dropped).
	Options []Option
	// Usage is the token usage Vertex AI reported.
	Usage Usage
	// ModelVersion is the model version that answered.
	ModelVersion string
}

// Usage is the token usage of one call, from the response's usage metadata.
type Usage struct {
	PromptTokens int
	// OutputTokens counts the answer's tokens (candidatesTokenCount).
	OutputTokens int
	// ThoughtsTokens counts a thinking model's reasoning tokens, billed as output.
	ThoughtsTokens int
	// AudioTokens is the part of PromptTokens that is audio (promptTokensDetails), priced apart.
	AudioTokens int
	TotalTokens int
}

// answer is the raw shape of the model's JSON, before validation.
type answer struct {
	Intent        *string         `json:"intent"`
	Confidence    *json.Number    `json:"confidence"`
	Data          json.RawMessage `json:"data"`
	MissingFields []*string       `json:"missing_fields"`
	Reply         *string         `json:"reply"`
	Options       []struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Description string `json:"description"`
	} `json:"options"`
}

// Option is one choice the model offers the user.
type Option struct {
	ID, Title, Description string
}

// MaxOptions is how many choices an answer may offer (a WhatsApp list's rows).
const MaxOptions = 10

// parseAnswer validates the model's text against the call's intents. The model is untrusted:
// anything outside the schema is an ErrInvalidResponse, except unknown data keys and unknown
// missing field names, which are dropped. The coercions are documented on Result.Data.
func (c *call) parseAnswer(text string) (Result, error) {
	var a answer
	if err := decodeOne([]byte(text), &a); err != nil {
		return Result{}, invalidf("answer is not one JSON object: %s", jsonErrorKind(err))
	}
	if a.Intent == nil {
		return Result{}, invalidf("answer has no intent")
	}
	var intent *Intent
	if *a.Intent != GeneralQuery {
		in, ok := c.intents[*a.Intent]
		if !ok {
			// Not quoted: a confused model may put the user's words there.
			return Result{}, invalidf("intent not offered")
		}
		intent = in
	}
	if a.Confidence == nil {
		return Result{}, invalidf("answer has no confidence")
	}
	conf, err := a.Confidence.Float64()
	if err != nil || math.IsNaN(conf) || conf < 0 || conf > 1 {
		return Result{}, invalidf("confidence %s is not within [0,1]", a.Confidence.String())
	}
	if a.Reply == nil || strings.TrimSpace(*a.Reply) == "" {
		return Result{}, invalidf("answer has no reply")
	}
	res := Result{Intent: *a.Intent, Confidence: conf, Reply: *a.Reply, Data: map[string]any{}}
	for _, o := range a.Options {
		id, title := strings.TrimSpace(o.ID), strings.TrimSpace(o.Title)
		if id == "" || title == "" || len(id) > 100 || len(res.Options) == MaxOptions {
			continue
		}
		res.Options = append(res.Options, Option{ID: id, Title: title, Description: strings.TrimSpace(o.Description)})
	}
	if intent == nil {
		return res, nil
	}

	var raw map[string]json.RawMessage
	if len(a.Data) > 0 && !bytes.Equal(bytes.TrimSpace(a.Data), []byte("null")) {
		if err := decodeOne(a.Data, &raw); err != nil {
			return Result{}, invalidf("data is not a JSON object")
		}
	}
	for _, f := range intent.Fields {
		v, ok := raw[f.Name]
		if !ok {
			continue
		}
		val, present, err := fieldValue(f.Type, v)
		if err != nil {
			return Result{}, invalidf("data field %q: %v", f.Name, err)
		}
		if present {
			res.Data[f.Name] = val
		}
	}

	missing := map[string]bool{}
	for _, m := range a.MissingFields {
		if m == nil {
			return Result{}, invalidf("missing_fields holds a non-string")
		}
		missing[*m] = true
	}
	for _, r := range intent.Required {
		if _, ok := res.Data[r]; !ok {
			missing[r] = true
		}
	}
	for _, f := range intent.Fields {
		if missing[f.Name] {
			res.MissingFields = append(res.MissingFields, f.Name)
		}
	}
	return res, nil
}

// fieldValue checks one data value against its declared type. present is false for a value
// that counts as absent (null, blank string).
func fieldValue(typ string, raw json.RawMessage) (v any, present bool, err error) {
	var x any
	if err := decodeOne(raw, &x); err != nil {
		return nil, false, errors.New("not JSON")
	}
	if x == nil {
		return nil, false, nil
	}
	switch typ {
	case TypeString:
		s, ok := x.(string)
		if !ok {
			return nil, false, errors.New("want a string")
		}
		return s, strings.TrimSpace(s) != "", nil
	case TypeDate:
		s, ok := x.(string)
		if !ok {
			return nil, false, errors.New("want a date string")
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, false, nil
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return nil, false, errors.New("want a date YYYY-MM-DD")
		}
		return s, true, nil
	case TypeInteger:
		switch n := x.(type) {
		case json.Number:
			if i, err := n.Int64(); err == nil {
				return i, true, nil
			}
			f, err := n.Float64()
			if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
				return nil, false, errors.New("want an integer")
			}
			return int64(f), true, nil
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			if err != nil {
				return nil, false, errors.New("want an integer")
			}
			return i, true, nil
		}
		return nil, false, errors.New("want an integer")
	case TypeNumber:
		var f float64
		var err error
		switch n := x.(type) {
		case json.Number:
			f, err = n.Float64()
		case string:
			f, err = strconv.ParseFloat(strings.TrimSpace(n), 64)
		default:
			err = errors.New("not a number")
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false, errors.New("want a number")
		}
		return f, true, nil
	case TypeBoolean:
		b, ok := x.(bool)
		if !ok {
			return nil, false, errors.New("want a boolean")
		}
		return b, true, nil
	}
	return nil, false, errors.New("unknown type")
}

// decodeOne decodes exactly one JSON value (numbers as json.Number) and rejects trailing data.
func decodeOne(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// jsonErrorKind names a JSON error without quoting the input.
func jsonErrorKind(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return "syntax error at offset " + strconv.FormatInt(syn.Offset, 10)
	case errors.As(err, &typ):
		return "field " + strconv.Quote(typ.Field) + " has the wrong type (" + typ.Value + ")"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "empty or truncated"
	}
	// Other decoding errors quote the input.
	return "invalid value"
}
