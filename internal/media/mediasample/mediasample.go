// Package mediasample holds three small media files for the local stack and the tests (a voice
// note, a photo, a PDF booking form) and what the fake Gemini is to hear or read in each: fed to
// geminifake.Server.SetTranscript, they make the default tour-bus rules answer a voice note as
// they answer the same words typed.
package mediasample

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// File is one sample file.
type File struct {
	// Name is the file's name in this directory.
	Name string
	// Type is the WhatsApp message type that carries it: audio, image or document.
	Type     string
	MIMEType string
	// Voice marks a voice note.
	Voice bool
	Data  []byte
	// Transcript is what the fake Gemini finds in the file.
	Transcript string
}

// SHA256Hex is the file's SHA-256 in hex, the key of geminifake's transcripts.
func (f File) SHA256Hex() string {
	s := sha256.Sum256(f.Data)
	return hex.EncodeToString(s[:])
}

var (
	//go:embed voice-note.ogg
	voiceNote []byte
	//go:embed photo.jpg
	photo []byte
	//go:embed booking-form.pdf
	bookingForm []byte
)

// VoiceNote is one second of Ogg Opus silence that the fake hears as a booking request.
func VoiceNote() File {
	return File{Name: "voice-note.ogg", Type: "audio", MIMEType: "audio/ogg; codecs=opus", Voice: true, Data: clone(voiceNote),
		Transcript: "pesan bus 01 untuk Pak Agus tanggal 1 Maret, 15 juta"}
}

// Photo is a 96×64 JPEG of a bus that the fake sees as a broken air conditioning.
func Photo() File {
	return File{Name: "photo.jpg", Type: "image", MIMEType: "image/jpeg", Data: clone(photo),
		Transcript: "the photo shows bus 03 with its air conditioning broken"}
}

// BookingForm is a one-page PDF booking form.
func BookingForm() File {
	return File{Name: "booking-form.pdf", Type: "document", MIMEType: "application/pdf", Data: clone(bookingForm),
		Transcript: "booking form: book bus 02 for Ibu Sari on 2 April"}
}

// Files are every sample.
func Files() []File { return []File{VoiceNote(), Photo(), BookingForm()} }

// Transcripts maps each sample's hex SHA-256 to its transcript, for geminifake.
func Transcripts() map[string]string {
	m := map[string]string{}
	for _, f := range Files() {
		m[f.SHA256Hex()] = f.Transcript
	}
	return m
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
