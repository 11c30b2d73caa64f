package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wapipe/wapipe/internal/api"
	"github.com/wapipe/wapipe/internal/apikey"
	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/operator"
	"github.com/wapipe/wapipe/internal/store"
)

const sendUsage = `Usage: wapipe send --tenant ID (--to NUMBER | --recipient BSUID) MESSAGE [flags]

Sends one message on the tenant's behalf through the api service, as a business does
(POST /v1/messages), and prints its id (msg_…) alone on the last line; follow it with
GET /v1/messages/{id}. MESSAGE is one of:

  --text T                           a text message
  --image FILE [--caption C]         uploads FILE (POST /v1/media), then sends the image by id
  --document FILE [--filename N] [--caption C]
                                     likewise; the filename shown defaults to FILE's base name
  --location LAT,LNG [--name N] [--address A]
  --template NAME --language CODE [--param V]...
                                     a template; each --param fills the body's next {{n}}

--recipient sends to a business-scoped user id (US.1349…), as a contact who writes with a username
and no phone number is known; with --to as well, the message goes to --to, as Meta does.
Everything but a template needs the contact's 24-hour window (a message from them in the last
24 hours), as Meta requires. The api is --api-url (env PUBLIC_BASE_URL, which a running
devstack provides); the key is --api-key or env WAPIPE_API_KEY (prefer the variable: a flag is
visible to other users of the machine). Without a key, send creates one for the tenant in
Firestore that expires after an hour (like wapipe tenants api-key --expires 1h) and says so.`

// sendKeyTTL is how long a key send creates for itself lasts: long enough for a session of
// trying things, short enough that a forgotten one does not linger.
const sendKeyTTL = time.Hour

// sendFlags are send's command line.
type sendFlags struct {
	tenant, to, recipient, number, idem  string
	replyTo                              string
	apiURL, key                          string
	text, image, document, location, tpl string
	caption, filename, name, address     string
	language                             string
	params                               stringList
}

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("send", sendUsage)
	var f sendFlags
	var c connFlags
	c.registerFirestore(fs)
	fs.StringVar(&f.tenant, "tenant", "", "the tenant that sends (required)")
	fs.StringVar(&f.to, "to", "", "the contact's phone number: digits with the country code (this or --recipient)")
	fs.StringVar(&f.recipient, "recipient", "", "the contact's business-scoped user id (US.1349…), for one known without a phone number")
	fs.StringVar(&f.number, "phone-number-id", "", "the tenant's number to send from, when it has several")
	fs.StringVar(&f.idem, "idempotency-key", "", "Idempotency-Key: the same key and message give the same id, sent once")
	fs.StringVar(&f.replyTo, "reply-to", "", "quote this message (its wamid) in the reply")
	fs.StringVar(&f.apiURL, "api-url", env("PUBLIC_BASE_URL", "http://127.0.0.1:8083"), "the api service (env PUBLIC_BASE_URL)")
	fs.StringVar(&f.key, "api-key", os.Getenv("WAPIPE_API_KEY"), "the tenant's API key (env WAPIPE_API_KEY); empty: create one that expires in 1h")
	fs.StringVar(&f.text, "text", "", "send a text message")
	fs.StringVar(&f.image, "image", "", "upload this image file and send it")
	fs.StringVar(&f.document, "document", "", "upload this document file and send it")
	fs.StringVar(&f.location, "location", "", "send a location: LAT,LNG in decimal degrees")
	fs.StringVar(&f.tpl, "template", "", "send this template (with --language)")
	fs.StringVar(&f.caption, "caption", "", "--image, --document: the caption")
	fs.StringVar(&f.filename, "filename", "", "--document: the file name shown (default: the file's base name)")
	fs.StringVar(&f.name, "name", "", "--location: the place's name")
	fs.StringVar(&f.address, "address", "", "--location: the place's address")
	fs.StringVar(&f.language, "language", "", "--template: the template's language code (en_US, id)")
	fs.Var(&f.params, "param", "--template: the body's next parameter (repeat for each)")
	pos, err := fs.parse(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("send takes no arguments, got %q (see wapipe send --help)", pos[0])
	}
	body, upload, err := f.message()
	if err != nil {
		return err
	}
	if u, err := url.Parse(f.apiURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--api-url: want the api's http(s) URL, got %q", f.apiURL)
	}
	if f.key == "" {
		if f.key, err = sendKey(ctx, c, f.tenant); err != nil {
			return err
		}
		id, _ := apikey.ID(f.key)
		fmt.Fprintf(stderr, "created an API key for %s that expires in 1h (%s); set WAPIPE_API_KEY to use your own\n", f.tenant, apikey.DisplayPrefix(id))
	}
	client := &apiClient{base: strings.TrimRight(f.apiURL, "/"), key: f.key}
	if upload != nil {
		m, err := client.upload(ctx, upload.path, f.number)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "uploaded %s (%s, %d bytes): media id %s\n", filepath.Base(upload.path), m.MIMEType, m.FileSize, m.ID)
		upload.media.ID = m.ID
	}
	res, err := client.send(ctx, body, f.idem)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "accepted: %s (follow it with GET %s/v1/messages/%s)\n", res.Status, client.base, res.ID)
	_, err = fmt.Fprintln(stdout, res.ID)
	return err
}

// pendingUpload is a file to upload before the message goes; media takes its id.
type pendingUpload struct {
	path  string
	media *graph.Media
}

// message checks the command line and builds the body, Meta's send body as the api takes it
// (and the upload it waits for).
func (f *sendFlags) message() (*api.SendRequest, *pendingUpload, error) {
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	b := &api.SendRequest{To: f.to, Recipient: f.recipient, PhoneNumberID: f.number, Type: f.kind()}
	if f.replyTo != "" {
		b.Context = &graph.Context{MessageID: f.replyTo}
	}
	var up *pendingUpload
	switch b.Type {
	case "text":
		b.Text = &graph.Text{Body: f.text}
	case "image":
		b.Image = &graph.Media{Caption: f.caption}
		up = &pendingUpload{path: f.image, media: b.Image}
	case "document":
		name := f.filename
		if name == "" {
			name = filepath.Base(f.document)
		}
		b.Document = &graph.Media{Caption: f.caption, Filename: name}
		up = &pendingUpload{path: f.document, media: b.Document}
	case "location":
		lat, lng, ok := strings.Cut(f.location, ",")
		la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
		ln, err2 := strconv.ParseFloat(strings.TrimSpace(lng), 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, nil, usageErrorf("--location: want LAT,LNG in decimal degrees, such as -8.65,115.2167")
		}
		b.Location = &graph.Location{Latitude: graph.NewCoordinate(la), Longitude: graph.NewCoordinate(ln), Name: f.name, Address: f.address}
	case "template":
		if f.language == "" {
			return nil, nil, usageErrorf("--template needs --language (the template's language code, such as en_US)")
		}
		b.Template = &graph.Template{Name: f.tpl, Language: graph.Language{Code: f.language}}
		if len(f.params) > 0 {
			body := graph.Component{Type: "body"}
			for _, p := range f.params {
				body.Parameters = append(body.Parameters, graph.Parameter{Type: "text", Text: p})
			}
			b.Template.Components = []graph.Component{body}
		}
	}
	if up != nil {
		if st, err := os.Stat(up.path); err != nil || !st.Mode().IsRegular() {
			return nil, nil, usageErrorf("--%s: %s is not a readable file", b.Type, up.path)
		}
	}
	return b, up, nil
}

// check refuses a command line without a tenant or a contact, with no message kind or more than
// one, or with a flag of another kind than the message's.
func (f *sendFlags) check() error {
	switch {
	case f.tenant == "":
		return usageErrorf("--tenant is required")
	case f.to == "" && f.recipient == "":
		return usageErrorf("--to or --recipient is required (the contact's phone number, or business-scoped user id)")
	}
	var kinds []string
	for name, v := range map[string]string{"text": f.text, "image": f.image, "document": f.document, "location": f.location, "template": f.tpl} {
		if v != "" {
			kinds = append(kinds, "--"+name)
		}
	}
	if len(kinds) != 1 {
		return usageErrorf("give one of --text, --image, --document, --location or --template (got %d)", len(kinds))
	}
	only := func(flag, value string, kinds ...string) error {
		if value == "" {
			return nil
		}
		for _, k := range kinds {
			if f.kind() == k {
				return nil
			}
		}
		return usageErrorf("--%s goes with --%s only", flag, strings.Join(kinds, " or --"))
	}
	for _, err := range []error{
		only("caption", f.caption, "image", "document"), only("filename", f.filename, "document"),
		only("name", f.name, "location"), only("address", f.address, "location"),
		only("language", f.language, "template"), only("param", strings.Join(f.params, ""), "template"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// kind is the message type the flags ask for.
func (f *sendFlags) kind() string {
	switch {
	case f.text != "":
		return "text"
	case f.image != "":
		return "image"
	case f.document != "":
		return "document"
	case f.location != "":
		return "location"
	default:
		return "template"
	}
}

// sendKey creates a key for tenant that expires after sendKeyTTL, as tenants api-key does.
func sendKey(ctx context.Context, c connFlags, tenant string) (string, error) {
	if err := c.resolve(); err != nil {
		return "", err
	}
	db, err := c.conn.Store(ctx)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ops := &operator.Tenants{Store: store.NewTenants(db, store.Options{}), Keys: store.NewAPIKeys(db, store.Options{})}
	key, err := credentials(ctx, ops, db, c).APIKeyExpiring(ctx, tenant, sendKeyTTL)
	if err != nil {
		return "", fmt.Errorf("create an API key for %s (or set WAPIPE_API_KEY): %w", tenant, err)
	}
	return key, nil
}
