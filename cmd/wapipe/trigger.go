package main

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/operator"
)

// devAppSecret is devstack.DevAppSecret, the local stack's fixed app secret (a test keeps them
// equal); the CLI does not import devstack, which would build the whole pipeline into it.
const devAppSecret = "dev-app-secret"

// defaultWebhookURL is the local stack's webhook.
const defaultWebhookURL = "http://127.0.0.1:8080/webhooks/whatsapp"

const triggerUsage = `Usage: wapipe trigger [flags]

Builds a webhook payload shaped exactly like Meta's, signs it with the app secret
(X-Hub-Signature-256) and posts it to the webhook. Prints the inbound_event_id, the message ids
and, for every send, the webhook's status code and body. Exits 1 when an answer is not 2xx.

Examples:
  wapipe trigger --text "hello"
  wapipe trigger --to-number 123456789012345 --text "hello"   # to another tenant's number
  wapipe trigger --type batch --count 10
  wapipe trigger --repeat 3              # the same delivery three times: one reply
  wapipe trigger --type status --status read --message-id wamid.XYZ --callback-data reply-…
  wapipe trigger --type audio --file internal/media/mediasample/voice-note.ogg   # a voice note
  wapipe trigger --type image --file photo.jpg --caption "Bus 03 AC mati"
  wapipe trigger --type revoke --message-id wamid.XYZ            # the contact deletes wamid.XYZ
  wapipe trigger --type edit --message-id wamid.XYZ --text "Bus 02, not 01"
  wapipe trigger --type system --text 16505559999                # the contact's new number
  wapipe trigger --user-id US.13491208655302741918 --username julian --no-phone --name Julian --text hello
                                                                 # a user with a username and no phone
  wapipe trigger --type user_changed_user_id --user-id US.1349 --text US.2468   # the BSUID changed
  wapipe trigger --type preferences --text stop                  # stop marketing messages
  wapipe trigger --type account_update --text ACCOUNT_RESTRICTION
  wapipe trigger --type order | call_permission | unsupported | echo | calls | template_status

With --file, the file is first given to the fake Graph API (--graph-url, devstack's), which then
serves it to the worker like Meta serves a customer's media; the message names its id and sha256.`

func runTrigger(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("trigger", triggerUsage)
	var (
		url, secret string
		spec        operator.SampleSpec
		repeat      int
		timeout     time.Duration
	)
	fs.StringVar(&url, "url", defaultWebhookURL, "webhook URL")
	fs.StringVar(&secret, "secret", env("WHATSAPP_APP_SECRET", devAppSecret), "Meta app secret that signs the body (env WHATSAPP_APP_SECRET; default the devstack dev secret)")
	fs.StringVar(&spec.Type, "type", "text", "payload type: "+strings.Join(operator.SampleTypes, "|"))
	fs.StringVar(&spec.Status, "status", "delivered", "status of a --type status payload: "+strings.Join(operator.SampleStatuses, "|"))
	fs.StringVar(&spec.MessageID, "message-id", "", "the inbound message's id (default: a fresh wamid); for --type status, the outbound message the status is about (required); for reaction, the message reacted to")
	fs.StringVar(&spec.CallbackData, "callback-data", "", "biz_opaque_callback_data of a status (wapipe's idempotency key, reply-…)")
	fs.StringVar(&spec.From, "from", "", "customer's phone number (default: Meta's sample number)")
	fs.StringVar(&spec.UserID, "user-id", "", "customer's business-scoped user id (BSUID, e.g. US.13491208655302741918), sent beside the phone")
	fs.StringVar(&spec.Username, "username", "", "customer's WhatsApp username (contacts[].profile.username)")
	fs.BoolVar(&spec.NoPhone, "no-phone", false, "leave the phone out, as Meta does for a user with a username: the customer is known by --user-id alone")
	fs.StringVar(&spec.Name, "name", "", "customer's profile name (default: the sample's)")
	fs.StringVar(&spec.ToNumber, "to-number", "", "the business number's phone_number_id the payload names, which picks the tenant (default: the sample tenant's, 106540352242922)")
	fs.StringVar(&spec.Text, "text", "", "text of a text message; caption of an image; title of a button or list reply; emoji of a reaction")
	fs.IntVar(&spec.Count, "count", 3, "number of messages in a --type batch payload")
	var file, caption, mimeType, graphURL string
	fs.StringVar(&file, "file", "", "file of an image, audio, video or document message, uploaded to the fake Graph API first")
	fs.StringVar(&caption, "caption", "", "caption of an image, video or document message (same as --text)")
	fs.StringVar(&mimeType, "mime", "", "MIME type of --file (default: from its extension or content)")
	fs.StringVar(&graphURL, "graph-url", env("GRAPH_API_BASE_URL", defaultGraphURL), "the fake Graph API that --file is uploaded to (env GRAPH_API_BASE_URL)")
	fs.IntVar(&repeat, "repeat", 1, "post the same payload this many times (Meta's redeliveries)")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "timeout of each POST")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected argument %q", pos[0])
	}
	if repeat < 1 || repeat > 1000 {
		return usageErrorf("--repeat must be 1 to 1000, got %d", repeat)
	}
	if secret == "" {
		return usageErrorf("no app secret: set WHATSAPP_APP_SECRET or --secret")
	}
	if caption != "" {
		spec.Text = caption
	}
	client := &http.Client{Timeout: timeout}
	if file != "" {
		if err := attachFile(ctx, client, &spec, file, mimeType, graphURL); err != nil {
			return err
		}
	}
	d, err := operator.BuildDelivery(spec)
	if err != nil {
		return usageError{err.Error()}
	}
	io.WriteString(stdout, describeDelivery(spec, d))

	failed := 0
	for i := range repeat {
		res, err := operator.Post(ctx, client, url, secret, d.Body)
		if err != nil {
			return fmt.Errorf("send %d of %d: %w", i+1, repeat, err)
		}
		fmt.Fprintf(stdout, "send %d/%d: %d %s (%s, correlation_id %s)\n", i+1, repeat, res.StatusCode, res.Body,
			res.Elapsed.Round(time.Microsecond*100), res.CorrelationID)
		if res.StatusCode < 200 || res.StatusCode > 299 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("the webhook refused %d of %d sends", failed, repeat)
	}
	return nil
}

// describeDelivery says what the payload of d holds: its event id, media, message ids (and
// their idempotency keys when LOG_HASH_KEY gives the keyer) and statuses.
func describeDelivery(spec operator.SampleSpec, d operator.Delivery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "type %s: inbound_event_id %s\n", spec.Type, d.EventID)
	if spec.Media != nil {
		fmt.Fprintf(&b, "media id %s (%s)\n", spec.Media.ID, spec.Media.MIMEType)
	}
	if len(d.MessageIDs) > 0 {
		fmt.Fprintf(&b, "message ids: %s\n", strings.Join(d.MessageIDs, " "))
		if k, err := keyerFromEnv(); err == nil {
			fmt.Fprintf(&b, "idempotency keys: %s\n", strings.Join(d.IdempotencyKeys(k), " "))
		}
	}
	if len(d.StatusIDs) > 0 {
		fmt.Fprintf(&b, "statuses: %s\n", strings.Join(d.StatusIDs, " "))
	}
	return b.String()
}

// defaultGraphURL is the local stack's fake Graph API.
const defaultGraphURL = "http://127.0.0.1:8090/" + graph.Version

// attachFile uploads file to the fake Graph API and makes spec's media message name it.
func attachFile(ctx context.Context, hc *http.Client, spec *operator.SampleSpec, file, mimeType, graphURL string) error {
	switch spec.Type {
	case "image", "audio", "video", "document":
	default:
		return usageErrorf("--file needs --type image, audio, video or document, not %q", spec.Type)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return usageErrorf("--file: %v", err)
	}
	if mimeType == "" {
		mimeType = fileMIME(file, data)
	}
	f, err := operator.UploadMedia(ctx, hc, graphURL, data, mimeType)
	if err != nil {
		return err
	}
	f.Voice = spec.Type == "audio" && strings.HasPrefix(mimeType, "audio/ogg")
	if spec.Type == "document" {
		f.Filename = filepath.Base(file)
	}
	spec.Media = &f
	return nil
}

// fileMIME is the type of a file as WhatsApp would name it: a voice note's is Meta's "audio/ogg;
// codecs=opus".
func fileMIME(name string, data []byte) string {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".ogg", ".opus":
		return "audio/ogg; codecs=opus"
	case ".heic", ".heif", ".amr", ".aac", ".flac", ".3gp":
		return map[string]string{".heic": "image/heic", ".heif": "image/heif", ".amr": "audio/amr", ".aac": "audio/aac",
			".flac": "audio/flac", ".3gp": "video/3gpp"}[ext]
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return http.DetectContentType(data)
}
