package llm

import (
	"encoding/json"
	"strings"
)

// Estimate is what a request is expected to use, before it is sent: what a budget is checked
// against (the call is then settled from the answer's usage metadata).
type Estimate struct {
	// Prompt counts the request's tokens, Audio included; Output the answer's at most.
	Prompt, Audio, Output int
}

// Token rates of the estimate: about four characters a text token; Gemini's 32 tokens a second
// of audio, a voice note being about 2 KB a second (16 kbit/s Opus), so a file's size bounds
// its length; 258 tokens an image; 263 a second of video at about 1 Mbit/s; 258 a page of a PDF
// at about 50 KB a page.
const (
	charsPerToken   = 4
	audioBytesPerS  = 2000
	audioTokensPerS = 32
	imageTokens     = 258
	videoBytesPerS  = 125_000
	videoTokensPerS = 263
	pdfBytesPerPage = 50_000
	pdfTokensPerPg  = 258
	// answerTokens bounds the answer: a short JSON object (maxOutputTokens is not set, so
	// this is an estimate, settled after the call).
	answerTokens = 1024
)

// EstimateTokens estimates r's tokens from its size.
func EstimateTokens(r Request) Estimate {
	chars := len(r.Instructions) + len(r.Text) + len(r.Role) + len(r.Language)
	for _, t := range r.History {
		chars += len(t.Text)
	}
	if b, err := json.Marshal(r.Intents); err == nil {
		chars += len(b)
	}
	// The prompt wapipe wraps around them (request.go) is about 2,000 characters.
	e := Estimate{Prompt: chars/charsPerToken + 500, Output: answerTokens}
	if m := r.Media; m != nil {
		n := len(m.Data)
		switch kind := inlineTypes[m.MIMEType]; {
		case kind == "audio":
			e.Audio = n * audioTokensPerS / audioBytesPerS
		case kind == "image":
			e.Prompt += imageTokens
		case kind == "video":
			e.Prompt += n * videoTokensPerS / videoBytesPerS
		case strings.HasPrefix(m.MIMEType, "application/pdf"):
			e.Prompt += (n/pdfBytesPerPage + 1) * pdfTokensPerPg
		default:
			e.Prompt += n / charsPerToken
		}
		e.Prompt += e.Audio
	}
	return e
}
