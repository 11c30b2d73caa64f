package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wapipe/wapipe/internal/graph/graphfake"
	"github.com/wapipe/wapipe/internal/media/mediasample"
	"github.com/wapipe/wapipe/internal/testenv"
)

// TestSendImageThroughTheStack: `wapipe send --image F` on the local stack uploads the file
// through the real api and worker (POST /v1/media) to the fake Graph API, byte for byte, then
// sends the image by its id to a contact who wrote in the last 24 hours.
func TestSendImageThroughTheStack(t *testing.T) {
	t.Parallel()
	s := newStack(t, testenv.FastQueues(t))
	const contact, number = "16505550199", "106540352242922"
	mustCLI(t, "trigger", "--url", s.WebhookURL, "--secret", s.AppSecret, "--to-number", number, "--from", contact, "--text", "the photo please")
	s.waitSends(t, 1) // the acknowledgement: the contact's message was taken in
	out, errOut, err := cli(t, "send", "--project", s.Project, "--firestore-emulator", s.FirestoreHost,
		"--tenant", "sunrise-bus", "--to", contact, "--phone-number-id", number,
		"--api-url", s.APIURL, "--api-key", "", "--image", "../../internal/media/mediasample/photo.jpg", "--caption", "Bus 01")
	if err != nil {
		t.Fatalf("wapipe send --image: %v\nstderr:\n%s", err, errOut)
	}
	if !strings.HasPrefix(lastLine(out), "msg_") {
		t.Fatalf("last line %q, want the message id", lastLine(out))
	}
	var upload graphfake.Request
	for _, r := range s.Graph.Requests() {
		if r.Kind == graphfake.KindUpload {
			upload = r
		}
	}
	data, ok := s.Graph.MediaData(upload.MediaID)
	if !ok || !bytes.Equal(data, mediasample.Photo().Data) || upload.PhoneNumberID != number || upload.Body["type"] != "image/jpeg" {
		t.Fatalf("upload %+v: the fake holds %d bytes (found %v), want the photo's on %s as image/jpeg", upload, len(data), ok, number)
	}
	sends := s.waitSends(t, 2)
	img, _ := sends[1].Body["image"].(map[string]any)
	if sends[1].Body["type"] != "image" || img["id"] != upload.MediaID || img["caption"] != "Bus 01" {
		t.Errorf("Graph got %v, want the image by the uploaded id %s with its caption", sends[1].Body, upload.MediaID)
	}
}
