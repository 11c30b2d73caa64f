package llm

import (
	"testing"
)

func TestInlineMIMEType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"audio/ogg; codecs=opus", "audio/ogg", true},
		{"Image/JPEG", "image/jpeg", true},
		{"image/jpg", "image/jpeg", true},
		{"image/png", "image/png", true},
		{"image/webp", "image/webp", true},
		{"image/heic", "image/heic", true},
		{"image/heif", "image/heif", true},
		{"audio/mpeg", "audio/mpeg", true},
		{"audio/mp3", "audio/mp3", true},
		{"audio/aac", "audio/aac", true},
		{"audio/amr", "audio/amr", true},
		{"audio/x-wav", "audio/wav", true},
		{"audio/flac", "audio/flac", true},
		{"video/mp4", "video/mp4", true},
		{"video/3gpp", "video/3gpp", true},
		{"application/pdf", "application/pdf", true},
		{"text/plain; charset=utf-8", "text/plain", true},
		{"image/gif", "image/gif", false},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", false},
		{"application/zip", "application/zip", false},
		{"", "", false},
	} {
		got, ok := InlineMIMEType(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("InlineMIMEType(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMediaContents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		text      string
		wantParts int
	}{
		{"with caption", "Bus 03 AC mati", 3},
		{"without caption", "", 2},
	} {
		r := sampleRequest()
		r.Text = tc.text
		r.Media = &Media{MIMEType: "image/jpeg", Data: []byte{1, 2, 3}, Label: "photo"}
		if _, err := r.build(); err != nil {
			t.Fatalf("%s: build: %v", tc.name, err)
		}
		cs := r.contents()
		last := cs[len(cs)-1]
		if last.Role != RoleUser || len(last.Parts) != tc.wantParts {
			t.Fatalf("%s: last content = %s with %d parts, want user with %d", tc.name, last.Role, len(last.Parts), tc.wantParts)
		}
		if b := last.Parts[1].InlineData; b == nil || b.MIMEType != "image/jpeg" || string(b.Data) != "\x01\x02\x03" {
			t.Errorf("%s: part 1 = %+v, want the inline image", tc.name, last.Parts[1])
		}
		if tc.text != "" && last.Parts[2].Text != tc.text {
			t.Errorf("%s: part 2 = %q, want the caption", tc.name, last.Parts[2].Text)
		}
	}
}

func TestBuildRejectsInvalidMedia(t *testing.T) {
	t.Parallel()
	for _, m := range []*Media{
		{MIMEType: "image/gif", Data: []byte{1}},
		{MIMEType: "audio/ogg; codecs=opus", Data: []byte{1}}, // not normalised
		{MIMEType: "image/png"},
	} {
		r := sampleRequest()
		r.Media = m
		if _, err := r.build(); err == nil {
			t.Errorf("build with %+v: no error", m)
		}
	}
}
