package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestValidateMessageTypes decodes bodies as POST /v1/messages does (unknown fields refused) and
// validates them: each accepted body of Meta's types passes, each refused one names its field.
func TestValidateMessageTypes(t *testing.T) {
	t.Parallel()
	const to = `"to":"33612345678",`
	tpl := func(components string) string {
		return `{` + to + `"type":"template","template":{"name":"order_update","language":{"code":"en_US"},"components":[` + components + `]}}`
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name, body string
		// problem is a fragment of the refusal; empty means the body is accepted.
		problem string
	}{
		{"image by id", `{` + to + `"type":"image","image":{"id":"1013859600285441"}}`, ""},
		{"image by link with caption", `{` + to + `"type":"image","image":{"link":"https://example.com/a.png","caption":"Aloe"}}`, ""},
		{"audio", `{` + to + `"type":"audio","audio":{"id":"1"}}`, ""},
		{"video with caption", `{` + to + `"type":"video","video":{"id":"1","caption":"Bus"}}`, ""},
		{"document with filename", `{` + to + `"type":"document","document":{"link":"https://example.com/i.pdf","filename":"invoice.pdf","caption":"Invoice"}}`, ""},
		{"sticker", `{` + to + `"type":"sticker","sticker":{"id":"1"}}`, ""},
		{"quoted reply", `{` + to + `"type":"text","context":{"message_id":"wamid.X"},"text":{"body":"Yes"}}`, ""},
		{"image without id or link", `{` + to + `"type":"image","image":{"caption":"x"}}`, "image: id (from POST /v1/media) or link required"},
		{"image with both", `{` + to + `"type":"image","image":{"id":"1","link":"https://example.com/a.png"}}`, "image: id or link, not both"},
		{"http link", `{` + to + `"type":"video","video":{"link":"http://example.com/a.mp4"}}`, "video.link: must be an https URL"},
		{"link without host", `{` + to + `"type":"image","image":{"link":"https:///a.png"}}`, "image.link: must be an https URL"},
		{"relative link", `{` + to + `"type":"image","image":{"link":"/a.png"}}`, "image.link"},
		{"caption on audio", `{` + to + `"type":"audio","audio":{"id":"1","caption":"x"}}`, "audio.caption: not allowed"},
		{"caption on sticker", `{` + to + `"type":"sticker","sticker":{"id":"1","caption":"x"}}`, "sticker.caption: not allowed"},
		{"caption of 1024", `{` + to + `"type":"image","image":{"id":"1","caption":"` + long(1024) + `"}}`, ""},
		{"caption over 1024", `{` + to + `"type":"image","image":{"id":"1","caption":"` + long(1025) + `"}}`, "image.caption: at most 1024"},
		{"filename on an image", `{` + to + `"type":"image","image":{"id":"1","filename":"a.png"}}`, "image.filename: not allowed"},
		{"unknown media field", `{` + to + `"type":"image","image":{"id":"1","provider":"x"}}`, `unknown field "provider"`},
		{"media object of another type", `{` + to + `"type":"image","video":{"id":"1"}}`, "image: required when type is image"},
		{"two objects", `{` + to + `"type":"image","image":{"id":"1"},"audio":{"id":"1"}}`, "audio: not allowed when type is image"},
		{"empty context", `{` + to + `"type":"text","context":{"message_id":""},"text":{"body":"x"}}`, "context.message_id: required"},

		{"location as numbers", `{` + to + `"type":"location","location":{"latitude":-8.65,"longitude":115.2167,"name":"Pickup","address":"Jl. Legian"}}`, ""},
		{"location as strings, as Meta's example", `{` + to + `"type":"location","location":{"latitude":"37.44216251868683","longitude":"-122.16153582049394"}}`, ""},
		{"location at the edges", `{` + to + `"type":"location","location":{"latitude":-90,"longitude":180}}`, ""},
		{"latitude 91", `{` + to + `"type":"location","location":{"latitude":91,"longitude":0}}`, "location.latitude: decimal degrees from -90 to 90"},
		{"longitude -180.5", `{` + to + `"type":"location","location":{"latitude":0,"longitude":-180.5}}`, "location.longitude: decimal degrees from -180 to 180"},
		{"no latitude", `{` + to + `"type":"location","location":{"longitude":10}}`, "location.latitude: required"},
		{"no longitude", `{` + to + `"type":"location","location":{"latitude":10}}`, "location.longitude: required"},
		{"latitude not a number", `{` + to + `"type":"location","location":{"latitude":"north","longitude":10}}`, "location.latitude: wrong type, want a number"},
		{"latitude a boolean", `{` + to + `"type":"location","location":{"latitude":true,"longitude":10}}`, "location.latitude: wrong type, want a number"},

		{"contact card", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"Budi Santoso","first_name":"Budi"},"phones":[{"phone":"+62 812-0000-0000","type":"CELL","wa_id":"6281200000000"}],"emails":[{"email":"budi@example.com","type":"WORK"}],"urls":[{"url":"https://example.com","type":"WORK"}],"addresses":[{"city":"Denpasar","country_code":"ID","type":"HOME"}],"org":{"company":"Acme Bus","title":"Driver"},"birthday":"1990-04-01"}]}`, ""},
		{"no contact cards", `{` + to + `"type":"contacts","contacts":[]}`, "contacts: 1 to 257 contact cards, got 0"},
		{"258 contact cards", `{` + to + `"type":"contacts","contacts":[` + strings.TrimSuffix(strings.Repeat(`{"name":{"formatted_name":"A","first_name":"A"}},`, 258), ",") + `]}`, "contacts: 1 to 257"},
		{"card without formatted_name", `{` + to + `"type":"contacts","contacts":[{"name":{"first_name":"Budi"}}]}`, "contacts[0].name.formatted_name: required"},
		{"card with a bad birthday", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"A","last_name":"A"},"birthday":"01/04/1990"}]}`, "contacts[0].birthday: a date as YYYY-MM-DD"},
		{"card with an empty phone", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"A","last_name":"A"},"phones":[{"type":"HOME"}]}]}`, "contacts[0].phones[0]: phone or wa_id required"},
		{"card with an empty email", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"A","last_name":"A"},"emails":[{"type":"HOME"}]}]}`, "contacts[0].emails[0].email: required"},
		{"card with formatted_name alone", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"Budi"}}]}`, "contacts[0].name: first_name, last_name, middle_name, suffix or prefix required"},
		{"card with an unknown field", `{` + to + `"type":"contacts","contacts":[{"name":{"formatted_name":"A"},"nickname":"B"}]}`, `unknown field "nickname"`},
		{"contacts as free text", `{` + to + `"type":"contacts","contacts":["Budi"]}`, "contacts: wrong type, want an object"},
		{"caption a number", `{` + to + `"type":"image","image":{"id":"1","caption":5}}`, "image.caption: wrong type, want a string"},

		{"reaction", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👍"}}`, ""},
		{"reaction with skin tone", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👍🏽"}}`, ""},
		{"reaction with VS16", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"❤️"}}`, ""},
		{"reaction family (ZWJ)", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👨‍👩‍👧"}}`, ""},
		{"reaction flag", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"🇮🇩"}}`, ""},
		{"reaction subdivision flag", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"🏴󠁧󠁢󠁳󠁣󠁴󠁿"}}`, ""},
		{"reaction keycap", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"1️⃣"}}`, ""},
		{"reaction escaped, as Meta's example", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"\uD83D\uDE00"}}`, ""},
		{"reaction removed", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":""}}`, ""},
		{"reaction without message", `{` + to + `"type":"reaction","reaction":{"emoji":"👍"}}`, "reaction.message_id: required"},
		{"reaction of two emoji", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👍👍"}}`, "reaction.emoji: one emoji"},
		{"reaction of two flags", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"🇮🇩🇫🇷"}}`, "reaction.emoji: one emoji"},
		{"reaction of text", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"ok"}}`, "reaction.emoji: one emoji"},
		{"reaction of a digit", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"1"}}`, "reaction.emoji: one emoji"},
		{"reaction ending in ZWJ", `{` + to + `"type":"reaction","reaction":{"message_id":"wamid.X","emoji":"👍‍"}}`, "reaction.emoji: one emoji"},

		{"template with every component", tpl(`{"type":"header","parameters":[{"type":"document","document":{"link":"https://example.com/t.pdf","filename":"ticket.pdf"}}]},` +
			`{"type":"body","parameters":[{"type":"text","text":"Pablo"},{"type":"currency","currency":{"fallback_value":"$100.99","code":"USD","amount_1000":100990}},{"type":"date_time","date_time":{"fallback_value":"February 25, 1977"}}]},` +
			`{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"YES"}]},` +
			`{"type":"button","sub_type":"url","index":"1","parameters":[{"type":"text","text":"4417"}]},` +
			`{"type":"button","sub_type":"copy_code","index":"2","parameters":[{"type":"coupon_code","coupon_code":"SAVE25"}]},` +
			`{"type":"button","sub_type":"flow","index":"3","parameters":[{"type":"action","action":{"flow_token":"t1","flow_action_data":{"screen":"A"}}}]},` +
			`{"type":"button","sub_type":"catalog","index":"4","parameters":[{"type":"action","action":{"thumbnail_product_retailer_id":"sku-1"}}]}`), ""},
		{"template location header", tpl(`{"type":"header","parameters":[{"type":"location","location":{"latitude":"37.48","longitude":"-122.14","name":"Hub","address":"1 Hacker Way"}}]}`), ""},
		{"template named parameter", tpl(`{"type":"body","parameters":[{"type":"text","parameter_name":"customer_name","text":"Budi"}]}`), ""},
		{"template deterministic policy", `{` + to + `"type":"template","template":{"name":"t","language":{"code":"en","policy":"deterministic"}}}`, ""},
		{"template other policy", `{` + to + `"type":"template","template":{"name":"t","language":{"code":"en","policy":"fallback"}}}`, "template.language.policy"},
		{"two bodies", tpl(`{"type":"body","parameters":[{"type":"text","text":"a"}]},{"type":"body","parameters":[{"type":"text","text":"b"}]}`), "template.components[1]: a second body component"},
		{"two buttons at one index", tpl(`{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"a"}]},{"type":"button","sub_type":"quick_reply","index":"0","parameters":[{"type":"payload","payload":"b"}]}`), "template.components[1]: a second button 0 component"},
		{"footer component", tpl(`{"type":"footer","parameters":[{"type":"text","text":"x"}]}`), "template.components[0].type: header, body or button"},
		{"header of two parameters", tpl(`{"type":"header","parameters":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`), "template.components[0].parameters: a header takes one parameter, got 2"},
		{"header currency", tpl(`{"type":"header","parameters":[{"type":"currency","currency":{"fallback_value":"1","code":"USD","amount_1000":1}}]}`), "template.components[0].parameters[0].type: a header takes"},
		{"header text of 60", tpl(`{"type":"header","parameters":[{"type":"text","text":"` + long(60) + `"}]}`), ""},
		{"header text over 60", tpl(`{"type":"header","parameters":[{"type":"text","text":"` + long(61) + `"}]}`), "template.components[0].parameters[0].text: 1 to 60 characters"},
		{"body-only text of 32768", tpl(`{"type":"body","parameters":[{"type":"text","text":"` + long(32768) + `"}]}`), ""},
		{"body-only text over 32768", tpl(`{"type":"body","parameters":[{"type":"text","text":"` + long(32769) + `"}]}`), "template.components[0].parameters[0].text: 1 to 32768 characters"},
		{"body text over 1024 beside a header", tpl(`{"type":"header","parameters":[{"type":"text","text":"a"}]},{"type":"body","parameters":[{"type":"text","text":"` + long(1025) + `"}]}`), "template.components[1].parameters[0].text: 1 to 1024 characters"},
		{"empty text parameter", tpl(`{"type":"body","parameters":[{"type":"text","text":""}]}`), "template.components[0].parameters[0].text: required when type is text"},
		{"blank text parameter", tpl(`{"type":"body","parameters":[{"type":"text","text":"  "}]}`), "template.components[0].parameters[0].text: 1 to 32768"},
		{"body image", tpl(`{"type":"body","parameters":[{"type":"image","image":{"id":"1"}}]}`), "template.components[0].parameters[0].type: the body takes text, currency or date_time"},
		{"body without parameters", tpl(`{"type":"body","parameters":[]}`), "template.components[0].parameters: at least one"},
		{"type and object disagree", tpl(`{"type":"body","parameters":[{"type":"text","currency":{"fallback_value":"1","code":"USD","amount_1000":1}}]}`), "parameters[0].text: required when type is text"},
		{"a second object", tpl(`{"type":"body","parameters":[{"type":"text","text":"a","payload":"b"}]}`), "parameters[0].payload: not allowed when type is text"},
		{"currency without code", tpl(`{"type":"body","parameters":[{"type":"currency","currency":{"fallback_value":"$1","code":"usd","amount_1000":1000}}]}`), "currency.code: an ISO 4217 code"},
		{"currency without fallback", tpl(`{"type":"body","parameters":[{"type":"currency","currency":{"code":"USD","amount_1000":1000}}]}`), "currency.fallback_value: required"},
		{"date_time without fallback", tpl(`{"type":"body","parameters":[{"type":"date_time","date_time":{}}]}`), "date_time.fallback_value: required"},
		{"header image over http", tpl(`{"type":"header","parameters":[{"type":"image","image":{"link":"http://example.com/a.png"}}]}`), "parameters[0].image.link: must be an https URL"},
		{"header location latitude 91", tpl(`{"type":"header","parameters":[{"type":"location","location":{"latitude":91,"longitude":0}}]}`), "parameters[0].location.latitude"},
		{"button without sub_type", tpl(`{"type":"button","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), "template.components[0].sub_type: quick_reply, url, copy_code, flow or catalog"},
		{"button of another sub_type", tpl(`{"type":"button","sub_type":"phone_number","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), "sub_type: quick_reply"},
		{"button without index", tpl(`{"type":"button","sub_type":"quick_reply","parameters":[{"type":"payload","payload":"x"}]}`), `template.components[0].index: the button's position, "0" to "9"`},
		{"button index 10", tpl(`{"type":"button","sub_type":"quick_reply","index":"10","parameters":[{"type":"payload","payload":"x"}]}`), "index"},
		{"button index as a number", tpl(`{"type":"button","sub_type":"quick_reply","index":0,"parameters":[{"type":"payload","payload":"x"}]}`), "template.components.index: wrong type, want a string"},
		{"url button with a payload", tpl(`{"type":"button","sub_type":"url","index":"0","parameters":[{"type":"payload","payload":"x"}]}`), "parameters[0].type: a url button takes text"},
		{"copy_code button with text", tpl(`{"type":"button","sub_type":"copy_code","index":"0","parameters":[{"type":"text","text":"x"}]}`), "a copy_code button takes coupon_code"},
		{"flow button without action", tpl(`{"type":"button","sub_type":"flow","index":"0","parameters":[{"type":"action"}]}`), "parameters[0].action: required when type is action"},
		{"button without parameters", tpl(`{"type":"button","sub_type":"quick_reply","index":"0","parameters":[]}`), "a button takes one parameter, got 0"},
		{"sub_type on the body", tpl(`{"type":"body","sub_type":"url","parameters":[{"type":"text","text":"x"}]}`), "sub_type and index belong to button components"},
		{"unknown parameter field", tpl(`{"type":"body","parameters":[{"type":"date_time","date_time":{"fallback_value":"x","day_of_week":5}}]}`), `unknown field "day_of_week"`},
		{"unsupported type", `{` + to + `"type":"order","text":{"body":"x"}}`, `type: "order" is not supported`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(c.body))
			req, err := decodeRequest(httptest.NewRecorder(), r)
			if err == nil {
				err = req.Validate()
			}
			switch {
			case c.problem == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.problem != "" && err == nil:
				t.Fatalf("accepted, want a refusal naming %q", c.problem)
			case c.problem != "" && !strings.Contains(err.Error(), c.problem):
				t.Fatalf("refused with %q, want %q", err, c.problem)
			}
		})
	}
}

// TestLargestBodiesFitTheCap: the largest bodies Meta accepts pass the body cap: 257 contact
// cards with every field (Meta's example card), and a body-only template text parameter of 32768
// four-byte characters.
func TestLargestBodiesFitTheCap(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/send/contacts.json")
	if err != nil {
		t.Fatal(err)
	}
	var example struct {
		Contacts []json.RawMessage `json:"contacts"`
	}
	if err := json.Unmarshal(raw, &example); err != nil {
		t.Fatal(err)
	}
	var card bytes.Buffer
	if err := json.Compact(&card, example.Contacts[0]); err != nil {
		t.Fatal(err)
	}
	cards := strings.TrimSuffix(strings.Repeat(card.String()+",", MaxContacts), ",")
	bodies := map[string]string{
		"257 full contact cards": `{"to":"33612345678","type":"contacts","contacts":[` + cards + `]}`,
		"32768 emoji in a body-only template": `{"to":"33612345678","type":"template","template":{"name":"t","language":{"code":"en"},"components":[{"type":"body","parameters":[{"type":"text","text":"` +
			strings.Repeat("😀", MaxBodyOnlyParameter) + `"}]}]}}`,
	}
	for name, body := range bodies {
		r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		req, err := decodeRequest(httptest.NewRecorder(), r)
		if err == nil {
			err = req.Validate()
		}
		if err != nil {
			t.Errorf("%s (%d bytes): %v", name, len(body), err)
		}
	}
}

// TestValidateRecipient: a send names its contact by to (a phone number) and/or recipient (a
// BSUID or a parent BSUID in the forms of shared/meta/usernames.md); a malformed recipient is
// refused naming the field, whether or not to is given, and a BSUID in to is refused naming to.
func TestValidateRecipient(t *testing.T) {
	t.Parallel()
	const text = `"type":"text","text":{"body":"x"}`
	body := func(fields string) string { return `{` + fields + `,` + text + `}` }
	id128 := strings.Repeat("a", 128)
	cases := []struct {
		name, body string
		problem    string // a fragment of the refusal; empty: accepted
	}{
		{"to alone", body(`"to":"33612345678"`), ""},
		{"recipient alone", body(`"recipient":"US.13491208655302741918"`), ""},
		{"parent recipient alone", body(`"recipient":"US.ENT.99887766554433"`), ""},
		{"to and recipient", body(`"to":"33612345678","recipient":"US.13491208655302741918"`), ""},
		{"recipient of 128 characters", body(`"recipient":"BR.` + id128 + `"`), ""},
		{"parent recipient of 128 characters", body(`"recipient":"BR.ENT.` + id128 + `"`), ""},
		{"recipient of letters", body(`"recipient":"US.AbCdEf"`), ""},
		{"neither", `{` + text + `}`, "to or recipient: required"},
		{"empty recipient alone", body(`"recipient":""`), "to or recipient: required"},
		{"lower-case country", body(`"recipient":"us.123"`), "recipient: must be a business-scoped user id"},
		{"a phone in recipient", body(`"recipient":"16505551234"`), "recipient: must be"},
		{"country alone", body(`"recipient":"US."`), "recipient: must be"},
		{"parent prefix alone", body(`"recipient":"US.ENT."`), "recipient: must be"},
		{"three-letter country", body(`"recipient":"USA.123"`), "recipient: must be"},
		{"a dash", body(`"recipient":"US.123-4"`), "recipient: must be"},
		{"spaces", body(`"recipient":" US.123"`), "recipient: must be"},
		{"a username", body(`"recipient":"@bo_rivera"`), "recipient: must be"},
		{"129 characters", body(`"recipient":"BR.` + id128 + `a"`), "recipient: must be"},
		{"malformed beside a good to", body(`"to":"33612345678","recipient":"US."`), "recipient: must be"},
		{"a BSUID in to", body(`"to":"US.13491208655302741918"`), "to: must be a phone number"},
		{"a number", body(`"recipient":13491208655302741918`), "recipient: wrong type, want a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(c.body))
			req, err := decodeRequest(httptest.NewRecorder(), r)
			if err == nil {
				err = req.Validate()
			}
			switch {
			case c.problem == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.problem != "" && err == nil:
				t.Fatalf("accepted, want a refusal naming %q", c.problem)
			case c.problem != "" && !strings.Contains(err.Error(), c.problem):
				t.Fatalf("refused with %q, want %q", err, c.problem)
			}
		})
	}
}
