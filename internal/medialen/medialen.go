// Package medialen measures a file the model is to read, from its bytes alone, before the call:
// how long a voice note or a video lasts, how many pages a PDF has. The assistant refuses a
// file over the tenant's caps ("too long") instead of paying for it (CONTRACT.md, Money): a
// 15 MiB voice note is some 250,000 audio tokens against about 600 for a text turn.
//
// Lengths come from the container where it says them (an Ogg stream's last granule position,
// an MP4's movie header, a WAV's byte rate, a PDF's page objects); other encodings are bounded
// by their size at a generous bit rate, so a file is never called longer than it can be.
package medialen

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strings"
)

// Bytes a second of the encodings whose length is estimated from their size: at least these
// bit rates, so the estimate does not exceed the real length.
const (
	mpegBytesPerSecond = 16_000 // 128 kbit/s MP3 or AAC
	amrBytesPerSecond  = 1_525  // 12.2 kbit/s AMR-NB
)

// Seconds is how long the audio or video data of mimeType lasts; ok is false when it cannot be
// told (a type it does not know, a damaged container).
func Seconds(mimeType string, data []byte) (seconds float64, ok bool) {
	mt, _, _ := strings.Cut(strings.ToLower(mimeType), ";")
	switch strings.TrimSpace(mt) {
	case "audio/ogg", "audio/opus":
		return oggSeconds(data)
	case "video/mp4", "video/3gpp", "audio/mp4", "audio/m4a":
		return mp4Seconds(data)
	case "audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave":
		return wavSeconds(data)
	case "audio/mpeg", "audio/mp3", "audio/aac":
		return float64(len(data)) / mpegBytesPerSecond, len(data) > 0
	case "audio/amr":
		return float64(len(data)) / amrBytesPerSecond, len(data) > 0
	}
	return 0, false
}

// oggSeconds reads the granule position of an Ogg stream's last page: in 48 kHz samples for
// Opus (WhatsApp's voice notes), in the stream's own rate for Vorbis.
func oggSeconds(data []byte) (float64, bool) {
	if !bytes.HasPrefix(data, []byte("OggS")) || len(data) < 64 {
		return 0, false
	}
	rate := 0.0
	switch {
	case bytes.Contains(data[:min(len(data), 128)], []byte("OpusHead")):
		rate = 48_000
	default:
		if i := bytes.Index(data[:min(len(data), 128)], []byte("\x01vorbis")); i >= 0 && i+16 <= len(data) {
			rate = float64(binary.LittleEndian.Uint32(data[i+12:]))
		}
	}
	last := bytes.LastIndex(data, []byte("OggS"))
	if rate == 0 || last < 0 || last+14 > len(data) {
		return 0, false
	}
	granule := binary.LittleEndian.Uint64(data[last+6:])
	if granule == ^uint64(0) {
		return 0, false // a page that ends no packet: no position
	}
	return float64(granule) / rate, true
}

// mp4Seconds reads the movie header (mvhd): duration over timescale.
func mp4Seconds(data []byte) (float64, bool) {
	i := bytes.Index(data, []byte("mvhd"))
	if i < 0 || i+4+28 > len(data) {
		return 0, false
	}
	b := data[i+4:]
	var scale, dur uint64
	if b[0] == 1 { // version 1: 64-bit times
		if len(b) < 32 {
			return 0, false
		}
		scale, dur = uint64(binary.BigEndian.Uint32(b[20:])), binary.BigEndian.Uint64(b[24:])
	} else {
		scale, dur = uint64(binary.BigEndian.Uint32(b[12:])), uint64(binary.BigEndian.Uint32(b[16:]))
	}
	if scale == 0 {
		return 0, false
	}
	return float64(dur) / float64(scale), true
}

// wavSeconds is the data's size over the format's byte rate.
func wavSeconds(data []byte) (float64, bool) {
	if len(data) < 44 || !bytes.HasPrefix(data, []byte("RIFF")) || !bytes.Equal(data[8:12], []byte("WAVE")) {
		return 0, false
	}
	rate := binary.LittleEndian.Uint32(data[28:])
	if rate == 0 {
		return 0, false
	}
	return float64(len(data)-44) / float64(rate), true
}

// pageObject matches a PDF page object's type (not the /Pages tree's).
var pageObject = regexp.MustCompile(`/Type\s*/Page\b[^s]`)

// PDFPages counts a PDF's page objects; ok is false when none is visible (pages kept in
// compressed object streams), which a caller takes as unknown.
func PDFPages(data []byte) (int, bool) {
	if !bytes.HasPrefix(data, []byte("%PDF")) {
		return 0, false
	}
	n := len(pageObject.FindAllIndex(data, -1))
	return n, n > 0
}
