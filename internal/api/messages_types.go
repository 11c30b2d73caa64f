package api

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
)

// The checks of the message types beyond text, template names and interactive messages: media,
// location, contacts, reaction and template components. Each follows Meta's reference for the
// messages endpoint; what Meta leaves open (lengths it does not document) is left to Meta.

// validateMedia checks an image, audio, video, document or sticker object (field is its name
// in the body): an uploaded media id or an https link, not both; a caption only where Meta
// shows one (image, video, document), a filename only on a document.
func validateMedia(field string, m *graph.Media) error {
	kind := field[strings.LastIndex(field, ".")+1:]
	switch {
	case m.ID != "" && m.Link != "":
		return fmt.Errorf("%s: id or link, not both", field)
	case strings.TrimSpace(m.ID) == "" && m.Link == "":
		return fmt.Errorf("%s: id (from POST /v1/media) or link required", field)
	case m.Link != "" && !httpsURL(m.Link):
		return fmt.Errorf("%s.link: must be an https URL with a host", field)
	case m.Caption != "" && kind != "image" && kind != "video" && kind != "document":
		return fmt.Errorf("%s.caption: not allowed (only image, video and document take a caption)", field)
	case runes(m.Caption) > MaxCaption:
		return fmt.Errorf("%s.caption: at most %d characters, got %d", field, MaxCaption, runes(m.Caption))
	case m.Filename != "" && kind != "document":
		return fmt.Errorf("%s.filename: not allowed (only a document takes a filename)", field)
	}
	return nil
}

// httpsURL reports whether s is an absolute https URL with a host.
func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Hostname() != "" && u.User == nil
}

// validateLocation checks a location: latitude -90..90 and longitude -180..180, both required.
func validateLocation(field string, l *graph.Location) error {
	for _, c := range []struct {
		name  string
		v     graph.Coordinate
		limit float64
	}{{"latitude", l.Latitude, 90}, {"longitude", l.Longitude, 180}} {
		if c.v.IsZero() {
			return fmt.Errorf("%s.%s: required (decimal degrees)", field, c.name)
		}
		if d, err := c.v.Degrees(); err != nil || d < -c.limit || d > c.limit {
			return fmt.Errorf("%s.%s: decimal degrees from %g to %g", field, c.name, -c.limit, c.limit)
		}
	}
	return nil
}

// validateContacts checks a contacts message: 1 to 257 cards (Meta's limit), each with
// name.formatted_name and one more name part, a birthday as YYYY-MM-DD, and no empty entry in
// its lists.
func validateContacts(cs []graph.Contact) error {
	if len(cs) == 0 || len(cs) > MaxContacts {
		return fmt.Errorf("contacts: 1 to %d contact cards, got %d", MaxContacts, len(cs))
	}
	for i, c := range cs {
		f := fmt.Sprintf("contacts[%d]", i)
		n := c.Name
		switch {
		case strings.TrimSpace(n.FormattedName) == "":
			return fmt.Errorf("%s.name.formatted_name: required (the name as shown)", f)
		case strings.TrimSpace(n.FirstName+n.LastName+n.MiddleName+n.Suffix+n.Prefix) == "":
			// Meta's reference: "at least one of the optional parameters needs to be included
			// along with the formatted_name parameter".
			return fmt.Errorf("%s.name: first_name, last_name, middle_name, suffix or prefix required beside formatted_name", f)
		}
		if c.Birthday != "" {
			if _, err := time.Parse(time.DateOnly, c.Birthday); err != nil {
				return fmt.Errorf("%s.birthday: a date as YYYY-MM-DD", f)
			}
		}
		for j, p := range c.Phones {
			if strings.TrimSpace(p.Phone) == "" && p.WaID == "" {
				return fmt.Errorf("%s.phones[%d]: phone or wa_id required", f, j)
			}
		}
		for j, e := range c.Emails {
			if strings.TrimSpace(e.Email) == "" {
				return fmt.Errorf("%s.emails[%d].email: required", f, j)
			}
		}
		for j, u := range c.URLs {
			if strings.TrimSpace(u.URL) == "" {
				return fmt.Errorf("%s.urls[%d].url: required", f, j)
			}
		}
	}
	return nil
}

// validateReaction checks a reaction: the message to react to, and one emoji (or "" to remove
// the reaction).
func validateReaction(r *graph.Reaction) error {
	switch {
	case strings.TrimSpace(r.MessageID) == "":
		return errors.New("reaction.message_id: required (the wamid of the message to react to)")
	case r.Emoji != "" && !oneEmoji(r.Emoji):
		return errors.New(`reaction.emoji: one emoji, or "" to remove the reaction`)
	}
	return nil
}

// oneEmoji reports whether s is a single emoji: one base emoji with its modifiers (variation
// selector, skin tone, keycap, tags), a flag (two regional indicators), or such emoji joined by
// zero-width joiners (a family, a profession).
func oneEmoji(s string) bool {
	const (
		zwj      = '\u200d'
		keycap   = '\u20e3'
		vs15     = '\ufe0e'
		vs16     = '\ufe0f'
		regional = 0x1f1e6
	)
	rs := []rune(s)
	expectBase := true
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case expectBase:
			switch {
			case r >= regional && r <= regional+25:
				// A flag is exactly two regional indicators.
				if i+1 >= len(rs) || rs[i+1] < regional || rs[i+1] > regional+25 {
					return false
				}
				i++
			case (r >= '0' && r <= '9') || r == '#' || r == '*':
				// A keycap: the character, an optional VS16, then U+20E3.
				j := i + 1
				if j < len(rs) && rs[j] == vs16 {
					j++
				}
				if j >= len(rs) || rs[j] != keycap {
					return false
				}
				i = j
			case !emojiBase(r):
				return false
			}
			expectBase = false
		case r == vs15 || r == vs16 || (r >= 0x1f3fb && r <= 0x1f3ff) || (r >= 0xe0020 && r <= 0xe007f):
			// Presentation selectors, skin tones and tag sequences (subdivision flags) modify the
			// emoji before them.
		case r == zwj:
			if i == len(rs)-1 {
				return false
			}
			expectBase = true
		default:
			return false
		}
	}
	return len(rs) > 0 && !expectBase
}

// emojiBase reports whether r can stand as an emoji: the pictographic blocks and the symbols
// WhatsApp shows as emoji.
func emojiBase(r rune) bool {
	switch {
	case r >= 0x1f000 && r <= 0x1faff, r >= 0x2600 && r <= 0x27bf, r >= 0x2300 && r <= 0x23ff,
		r >= 0x2b00 && r <= 0x2bff, r >= 0x2190 && r <= 0x21ff, r >= 0x25a0 && r <= 0x25ff,
		r >= 0x2934 && r <= 0x2935, r >= 0x3030 && r <= 0x303d, r == 0x3297, r == 0x3299,
		r == 0x00a9, r == 0x00ae, r == 0x203c, r == 0x2049, r == 0x2122, r == 0x2139:
		return true
	}
	return false
}

// Template components: which parameter types each component takes, and which one each button
// sub_type takes.
var (
	headerParameters = map[string]bool{"text": true, "image": true, "document": true, "video": true, "location": true}
	bodyParameters   = map[string]bool{"text": true, "currency": true, "date_time": true}
	buttonParameter  = map[string]string{"quick_reply": "payload", "url": "text", "copy_code": "coupon_code", "flow": "action", "catalog": "action"}
	buttonIndex      = regexp.MustCompile(`^[0-9]$`)
	currencyCode     = regexp.MustCompile(`^[A-Z]{3}$`)
)

// validateComponents checks a template's components: at most one header and one body, with
// parameters of the types Meta allows there; buttons with a sub_type, an index 0 to 9 (each
// index once) and the one parameter their sub_type takes; each parameter's type names the object
// it carries.
func validateComponents(cs []graph.Component) error {
	bodyOnly := len(cs) == 1
	seen := map[string]bool{} // "header", "body", and "button <index>"
	for i, c := range cs {
		f := fmt.Sprintf("template.components[%d]", i)
		if c.Type != "button" && (c.SubType != "" || c.Index != "") {
			return fmt.Errorf("%s: sub_type and index belong to button components", f)
		}
		once := c.Type
		if c.Type == "button" {
			once = "button " + c.Index
		}
		if seen[once] {
			return fmt.Errorf("%s: a second %s component (a template has one header, one body, one button per index)", f, once)
		}
		seen[once] = true
		switch c.Type {
		case "header":
			if len(c.Parameters) != 1 {
				return fmt.Errorf("%s.parameters: a header takes one parameter, got %d", f, len(c.Parameters))
			}
			if !headerParameters[c.Parameters[0].Type] {
				return fmt.Errorf("%s.parameters[0].type: a header takes text, image, document, video or location", f)
			}
		case "body":
			if len(c.Parameters) == 0 {
				return fmt.Errorf("%s.parameters: at least one (leave the body component out when it has none)", f)
			}
			for j, p := range c.Parameters {
				if !bodyParameters[p.Type] {
					return fmt.Errorf("%s.parameters[%d].type: the body takes text, currency or date_time", f, j)
				}
			}
		case "button":
			want, ok := buttonParameter[c.SubType]
			switch {
			case !ok:
				return fmt.Errorf("%s.sub_type: quick_reply, url, copy_code, flow or catalog", f)
			case !buttonIndex.MatchString(c.Index):
				return fmt.Errorf(`%s.index: the button's position, "0" to "9"`, f)
			case len(c.Parameters) != 1:
				return fmt.Errorf("%s.parameters: a button takes one parameter, got %d", f, len(c.Parameters))
			case c.Parameters[0].Type != want:
				return fmt.Errorf("%s.parameters[0].type: a %s button takes %s", f, c.SubType, want)
			}
		default:
			return fmt.Errorf("%s.type: header, body or button", f)
		}
		for j, p := range c.Parameters {
			limit := MaxBodyParameter
			switch {
			case c.Type == "header":
				limit = MaxHeaderParameter
			case c.Type == "body" && bodyOnly:
				limit = MaxBodyOnlyParameter
			}
			if err := validateParameter(fmt.Sprintf("%s.parameters[%d]", f, j), p, limit); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateParameter checks that p carries the object its type names, and no other.
func validateParameter(f string, p graph.Parameter, textLimit int) error {
	set := map[string]bool{
		"text": p.Text != "", "payload": p.Payload != "", "coupon_code": p.CouponCode != "",
		"currency": p.Currency != nil, "date_time": p.DateTime != nil, "image": p.Image != nil,
		"document": p.Document != nil, "video": p.Video != nil, "location": p.Location != nil, "action": p.Action != nil,
	}
	if !set[p.Type] {
		return fmt.Errorf("%s.%s: required when type is %s", f, p.Type, p.Type)
	}
	for _, name := range []string{"text", "payload", "coupon_code", "currency", "date_time", "image", "document", "video", "location", "action"} {
		if set[name] && name != p.Type {
			return fmt.Errorf("%s.%s: not allowed when type is %s", f, name, p.Type)
		}
	}
	switch p.Type {
	case "text":
		if strings.TrimSpace(p.Text) == "" || runes(p.Text) > textLimit {
			return fmt.Errorf("%s.text: 1 to %d characters", f, textLimit)
		}
	case "payload", "coupon_code":
		if strings.TrimSpace(p.Payload+p.CouponCode) == "" {
			return fmt.Errorf("%s.%s: required", f, p.Type)
		}
	case "currency":
		switch {
		case strings.TrimSpace(p.Currency.FallbackValue) == "":
			return fmt.Errorf("%s.currency.fallback_value: required (the amount as shown when it cannot be localized)", f)
		case !currencyCode.MatchString(p.Currency.Code):
			return fmt.Errorf("%s.currency.code: an ISO 4217 code such as USD", f)
		}
	case "date_time":
		if strings.TrimSpace(p.DateTime.FallbackValue) == "" {
			return fmt.Errorf("%s.date_time.fallback_value: required", f)
		}
	case "image":
		return validateMedia(f+".image", p.Image)
	case "document":
		return validateMedia(f+".document", p.Document)
	case "video":
		return validateMedia(f+".video", p.Video)
	case "location":
		return validateLocation(f+".location", p.Location)
	}
	return nil
}
