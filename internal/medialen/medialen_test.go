package medialen_test

import (
	"math"
	"testing"

	"github.com/wapipe/wapipe/internal/medialen"
	"github.com/wapipe/wapipe/internal/medialen/medialentest"
)

func TestSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, mime string
		data       []byte
		want       float64
		ok         bool
	}{
		{"an Opus voice note", "audio/ogg; codecs=opus", medialentest.OggOpus(42.5, 0), 42.5, true},
		{"a long one, padded", "audio/ogg", medialentest.OggOpus(3600, 1<<20), 3600, true},
		{"an MP4", "video/mp4", medialentest.MP4(95), 95, true},
		{"a WAV", "audio/wav", medialentest.WAV(3), 3, true},
		{"an MP3 by its size", "audio/mpeg", make([]byte, 160_000), 10, true},
		{"an AMR by its size", "audio/amr", make([]byte, 1_525*60), 60, true},
		{"not an Ogg stream", "audio/ogg", []byte("OggS but nothing more"), 0, false},
		{"an Ogg stream of no known codec", "audio/ogg", append([]byte("OggS"), make([]byte, 100)...), 0, false},
		{"no movie header", "video/mp4", []byte("ftypisom nothing"), 0, false},
		{"a type it does not know", "image/jpeg", []byte{0xff, 0xd8}, 0, false},
	}
	for _, tc := range tests {
		got, ok := medialen.Seconds(tc.mime, tc.data)
		if ok != tc.ok || math.Abs(got-tc.want) > 0.01 {
			t.Errorf("%s: %.2f s, %v; want %.2f s, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPDFPages(t *testing.T) {
	t.Parallel()
	if n, ok := medialen.PDFPages(medialentest.PDF(7)); n != 7 || !ok {
		t.Errorf("a PDF of 7 pages: %d, %v", n, ok)
	}
	if _, ok := medialen.PDFPages([]byte("%PDF-1.7 with its pages in object streams")); ok {
		t.Error("a PDF with no visible page object: want unknown")
	}
	if _, ok := medialen.PDFPages([]byte("not a pdf /Type /Page ")); ok {
		t.Error("not a PDF: want unknown")
	}
}
