package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
)

// chunkSize keeps each chunk document under Firestore's 1 MiB document limit with room for its
// other fields.
const chunkSize = 768 * 1024

// Payloads stores webhook payloads too large for one Cloud Task, out of band, in chunks under the
// event's inbound_events document. The inbound task carries the reference instead of the payload.
type Payloads struct {
	fs        *firestore.Client
	retention time.Duration
	now       func() time.Time
}

// NewPayloads returns a payload store; retention sets expire_at on the chunks.
func NewPayloads(db *DB, retention time.Duration) *Payloads {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Payloads{fs: db.fs, retention: retention, now: time.Now}
}

type chunk struct {
	Index    int       `firestore:"index"`
	Total    int       `firestore:"total"`
	Data     []byte    `firestore:"data"`
	ExpireAt time.Time `firestore:"expire_at"`
}

// refPrefix marks a payload reference, so a reader can tell it from anything else.
const refPrefix = "firestore://"

// Put stores body under the event and returns its reference. Storing the same event twice
// overwrites it with the same bytes, so a retried delivery is harmless.
func (p *Payloads) Put(ctx context.Context, eventID string, body []byte) (string, error) {
	parent := p.fs.Collection(InboundEvents).Doc(DocID(eventID))
	total := (len(body) + chunkSize - 1) / chunkSize
	expire := p.now().Add(p.retention)
	bw := p.fs.BulkWriter(ctx)
	jobs := make([]*firestore.BulkWriterJob, 0, total)
	for i := 0; i < total; i++ {
		end := min((i+1)*chunkSize, len(body))
		job, err := bw.Set(parent.Collection(PayloadChunks).Doc(chunkID(i)), chunk{
			Index: i, Total: total, Data: body[i*chunkSize : end], ExpireAt: expire,
		})
		if err != nil {
			bw.End()
			return "", fmt.Errorf("store payload chunk %d: %w", i, err)
		}
		jobs = append(jobs, job)
	}
	bw.End()
	for i, job := range jobs {
		if _, err := job.Results(); err != nil {
			return "", fmt.Errorf("store payload chunk %d: %w", i, err)
		}
	}
	return refPrefix + parent.Path[strings.Index(parent.Path, "/documents/")+len("/documents/"):], nil
}

// ErrBadRef is returned by Get for a reference it did not make.
var ErrBadRef = errors.New("not a payload reference")

// CheckPayloadRef checks that ref has the one form Put makes, firestore://inbound_events/<DocID>,
// and returns the document path it names. Anything else is refused before it reaches the client
// library, which builds no document (and panics) for a path with the wrong number of segments.
func CheckPayloadRef(ref string) (string, error) {
	path, ok := strings.CutPrefix(ref, refPrefix)
	id, ok2 := strings.CutPrefix(path, InboundEvents+"/")
	if !ok || !ok2 || !isDocID(id) {
		// The ref is not echoed: a malformed one can be anything, up to a megabyte.
		return "", fmt.Errorf("%w (%d bytes)", ErrBadRef, len(ref))
	}
	return path, nil
}

// isDocID reports whether id is what DocID makes: 64 lowercase hex digits.
func isDocID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Get reads a payload back from its reference; ErrBadRef when ref is not one Put made.
func (p *Payloads) Get(ctx context.Context, ref string) ([]byte, error) {
	path, err := CheckPayloadRef(ref)
	if err != nil {
		return nil, err
	}
	docs, err := p.fs.Doc(path).Collection(PayloadChunks).OrderBy("index", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read payload chunks: %w", err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("read payload %s: no chunks (expired or never stored)", ref)
	}
	var out []byte
	for i, d := range docs {
		var c chunk
		if err := d.DataTo(&c); err != nil {
			return nil, fmt.Errorf("decode payload chunk %d: %w", i, err)
		}
		if c.Index != i || c.Total != len(docs) {
			return nil, fmt.Errorf("read payload %s: chunk %d of %d missing", ref, i, c.Total)
		}
		out = append(out, c.Data...)
	}
	return out, nil
}

func chunkID(i int) string { return "c" + strconv.Itoa(1000+i) }
