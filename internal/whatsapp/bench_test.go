package whatsapp

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchSizes are the body sizes the webhook sees: a typical message, a large batch, and the
// biggest body Meta sends (3 MB).
var benchSizes = []struct {
	name string
	size int
}{
	{"1KB", 1 << 10},
	{"100KB", 100 << 10},
	{"3MB", 3 << 20},
}

// messagesPayload builds a realistic body of about size bytes: a batch of text messages with
// mixed-script bodies (escapes, multi-byte runes), from several senders.
func messagesPayload(size int) []byte {
	o := SampleOptions{MessageID: "wamid.BENCH", Timestamp: time.Unix(1749416383, 0)}.withDefaults()
	text := `Hello "there" — ¿qué tal? 你好 👍 line\break `
	var msgs []InboundMessage
	var contacts []Contact
	approx := 250 // bytes of envelope
	for i := 0; approx < size; i++ {
		from := "1650555" + strconv.Itoa(1000+i%50)
		body := strings.Repeat(text, 1+i%4)
		msgs = append(msgs, InboundMessage{From: from, ID: NewMessageID(), Timestamp: strconv.Itoa(1749416383 + i), Type: "text", Text: &Text{Body: body}})
		if i < 50 {
			contacts = append(contacts, Contact{Profile: Profile{Name: "Customer " + strconv.Itoa(i)}, WaID: from})
		}
		approx += 150 + len(body) + 10
	}
	return o.envelope(Value{Contacts: contacts, Messages: msgs})
}

// eventsPayload builds a body of about size bytes with neither messages nor statuses, so that
// InboundEventID takes the canonical-hash path.
func eventsPayload(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"object":"whatsapp_business_account","entry":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"102290129340398","time":1749416500,"changes":[{"field":"message_template_status_update","value":{"event":"APPROVED","message_template_id":` +
			strconv.Itoa(1689556908129832+i) + `,"message_template_name":"order_confirmation_` + strconv.Itoa(i) + `","message_template_language":"en_US","reason":"NONE","other_info":{"title":"Ok \u00e9","description":"fine"}}}]}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	for _, s := range benchSizes {
		body := messagesPayload(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInboundEventID measures the webhook's hot path (Parse + InboundEventID) for message
// payloads, and InboundEventID alone for payloads that must be hashed.
func BenchmarkInboundEventID(b *testing.B) {
	for _, s := range benchSizes {
		body := messagesPayload(s.size)
		b.Run("parse+message/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := Parse(body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := InboundEventID(body, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, s := range benchSizes {
		body := eventsPayload(s.size)
		p, err := Parse(body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("hash/"+s.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := InboundEventID(body, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNormalize(b *testing.B) {
	for _, s := range benchSizes {
		p, err := Parse(messagesPayload(s.size))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Normalize(p)
			}
		})
	}
}
