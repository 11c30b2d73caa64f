// Package medialentest makes files of a known length for tests: an Ogg Opus voice note, an MP4,
// a WAV and a PDF, as their containers say it (package medialen reads the same fields).
package medialentest

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// oggPage is one Ogg page with granule position granule and payload.
func oggPage(granule uint64, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("OggS")
	b.WriteByte(0) // version
	b.WriteByte(0) // header type
	_ = binary.Write(&b, binary.LittleEndian, granule)
	b.Write(make([]byte, 12)) // serial, sequence, checksum (not checked)
	b.WriteByte(1)            // one segment
	b.WriteByte(byte(len(payload)))
	b.Write(payload)
	return b.Bytes()
}

// OggOpus is a voice note of seconds, padded to size bytes (at least the pages').
func OggOpus(seconds float64, size int) []byte {
	head := append([]byte("OpusHead"), 1, 1, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0)
	b := oggPage(0, head)
	pad := size - len(b) - 28 - 4
	if pad > 0 {
		b = append(b, bytes.Repeat([]byte{0x55}, pad)...) // audio pages' bytes, unread
	}
	return append(b, oggPage(uint64(seconds*48_000), []byte("last"))...)
}

// MP4 is a video of seconds: a movie header with timescale 1000.
func MP4(seconds float64) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0, 24})
	b.WriteString("ftypisom")
	b.Write(make([]byte, 12))
	b.Write([]byte{0, 0, 0, 108})
	b.WriteString("moov")
	b.Write([]byte{0, 0, 0, 100})
	b.WriteString("mvhd")
	b.Write([]byte{0, 0, 0, 0}) // version 0, flags
	b.Write(make([]byte, 8))    // creation, modification
	_ = binary.Write(&b, binary.BigEndian, uint32(1000))
	_ = binary.Write(&b, binary.BigEndian, uint32(seconds*1000))
	b.Write(make([]byte, 80))
	return b.Bytes()
}

// WAV is seconds of 8 kHz 16-bit mono PCM.
func WAV(seconds float64) []byte {
	n := int(seconds * 16_000)
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+n))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, binary.LittleEndian, []uint32{16})
	_ = binary.Write(&b, binary.LittleEndian, []uint16{1, 1})
	_ = binary.Write(&b, binary.LittleEndian, []uint32{8000, 16_000})
	_ = binary.Write(&b, binary.LittleEndian, []uint16{2, 16})
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(n))
	b.Write(make([]byte, n))
	return b.Bytes()
}

// PDF is a document of pages pages.
func PDF(pages int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n")
	fmt.Fprintf(&b, "2 0 obj << /Type /Pages /Count %d >> endobj\n", pages)
	for i := range pages {
		fmt.Fprintf(&b, "%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n", i+3)
	}
	b.WriteString("%%EOF\n")
	return b.Bytes()
}
