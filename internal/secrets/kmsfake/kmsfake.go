// Package kmsfake is a fake Cloud KMS for tests. It speaks the Cloud KMS REST API the way
// google.golang.org/api/cloudkms/v1 (and so Tink's gcpkms client with TransportREST) calls it:
//
//	POST /v1/{name}:encrypt  {"plaintext","additionalAuthenticatedData", their "…Crc32c"}
//	POST /v1/{name}:decrypt  {"ciphertext","additionalAuthenticatedData", their "…Crc32c"}
//
// where name is projects/P/locations/L/keyRings/R/cryptoKeys/K. Bytes travel as base64 (either
// alphabet accepted, standard alphabet answered, as the real service does), CRC32C checksums are
// checked and acknowledged with the verified… fields, and errors are Google's JSON error body
// ({"error":{"code","message","status"}}). Each key name gets its own random AES-256-GCM key on
// first use, so a ciphertext made under one key, altered, or decrypted with other associated data
// answers 400 INVALID_ARGUMENT like the real service.
//
// The fake records every call (with the plaintext it saw, so tests can check what left the
// process) and can be told to fail the next N calls. It needs no credentials: point a client at
// it with option.WithEndpoint(srv.URL) and option.WithHTTPClient(srv.Client()).
package kmsfake

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Methods of a Call.
const (
	MethodEncrypt = "encrypt"
	MethodDecrypt = "decrypt"
	MethodOther   = "other" // an unknown path or method
)

// Call is one request the fake answered.
type Call struct {
	Method  string // MethodEncrypt, MethodDecrypt or MethodOther
	KeyName string // projects/…/cryptoKeys/K, as in the URL
	// Plaintext is the plaintext the caller sent (encrypt) or received (a successful decrypt).
	Plaintext []byte
	// AAD is the additional authenticated data the caller sent.
	AAD []byte
	// Status is the HTTP status the fake answered.
	Status int
}

// Fake is the fake Cloud KMS. It is safe for concurrent use; create it with New.
type Fake struct {
	mu       sync.Mutex
	keys     map[string]cipher.AEAD
	calls    []Call
	failures []int // HTTP statuses of the next failing calls
}

// New returns a fake with no keys, calls or scripted failures.
func New() *Fake {
	return &Fake{keys: map[string]cipher.AEAD{}}
}

// NewTestServer starts the fake on an httptest server (127.0.0.1). Close it when done.
func (f *Fake) NewTestServer() *httptest.Server { return httptest.NewServer(f) }

// Calls returns every call answered so far, oldest first.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CallCount returns how many calls of method (MethodEncrypt, MethodDecrypt) were answered,
// successful or not.
func (f *Fake) CallCount(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// FailNext makes the next n encrypt or decrypt calls answer httpStatus (e.g. 503) with Google's
// error body for it. Failures queue up after earlier ones.
func (f *Fake) FailNext(n, httpStatus int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failures = append(f.failures, httpStatus)
	}
}

// Reset forgets every call and scripted failure; keys are kept, so earlier ciphertexts still
// decrypt.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.failures = nil, nil
}

// callPath matches /v1/{cryptoKey name}:{method}.
var callPath = regexp.MustCompile(`^/v1/(projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/:]+):([a-zA-Z]+)$`)

// ServeHTTP answers like the Cloud KMS REST API.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := Call{Method: MethodOther}
	status, body := f.answer(r, &c)
	c.Status = status
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	buf, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}

// request is the union of EncryptRequest and DecryptRequest. The int64 checksums travel as
// JSON strings (proto3 JSON), and are optional.
type request struct {
	Plaintext                         string `json:"plaintext"`
	PlaintextCrc32c                   string `json:"plaintextCrc32c"`
	Ciphertext                        string `json:"ciphertext"`
	CiphertextCrc32c                  string `json:"ciphertextCrc32c"`
	AdditionalAuthenticatedData       string `json:"additionalAuthenticatedData"`
	AdditionalAuthenticatedDataCrc32c string `json:"additionalAuthenticatedDataCrc32c"`
}

func (f *Fake) answer(r *http.Request, c *Call) (int, any) {
	m := callPath.FindStringSubmatch(r.URL.Path)
	if m == nil || r.Method != http.MethodPost || (m[2] != MethodEncrypt && m[2] != MethodDecrypt) {
		return googleError(http.StatusNotFound, "The requested URL was not found on this server.")
	}
	c.Method, c.KeyName = m[2], m[1]
	if st, ok := f.nextFailure(); ok {
		return googleError(st, "")
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		return googleError(http.StatusBadRequest, "Invalid JSON payload received.")
	}
	aad, st, body := decodeField("additional_authenticated_data", req.AdditionalAuthenticatedData, req.AdditionalAuthenticatedDataCrc32c)
	if st != 0 {
		return st, body
	}
	c.AAD = aad
	key := f.key(c.KeyName)
	if c.Method == MethodEncrypt {
		pt, st, body := decodeField("plaintext", req.Plaintext, req.PlaintextCrc32c)
		if st != 0 {
			return st, body
		}
		c.Plaintext = pt
		if len(pt) == 0 {
			return googleError(http.StatusBadRequest, "Plaintext is required.")
		}
		nonce := make([]byte, key.NonceSize())
		_, _ = rand.Read(nonce) // never fails
		ct := key.Seal(nonce, nonce, pt, aad)
		return http.StatusOK, map[string]any{
			"name":                    c.KeyName + "/cryptoKeyVersions/1",
			"ciphertext":              base64.StdEncoding.EncodeToString(ct),
			"ciphertextCrc32c":        strconv.FormatInt(checksum(ct), 10),
			"verifiedPlaintextCrc32c": req.PlaintextCrc32c != "",
			"verifiedAdditionalAuthenticatedDataCrc32c": req.AdditionalAuthenticatedDataCrc32c != "",
			"protectionLevel": "SOFTWARE",
		}
	}
	ct, st, body := decodeField("ciphertext", req.Ciphertext, req.CiphertextCrc32c)
	if st != 0 {
		return st, body
	}
	if len(ct) < key.NonceSize() {
		return googleError(http.StatusBadRequest, "Decryption failed: the ciphertext is invalid.")
	}
	pt, err := key.Open(nil, ct[:key.NonceSize()], ct[key.NonceSize():], aad)
	if err != nil {
		return googleError(http.StatusBadRequest, "Decryption failed: the ciphertext is invalid.")
	}
	c.Plaintext = pt
	return http.StatusOK, map[string]any{
		"plaintext":       base64.StdEncoding.EncodeToString(pt),
		"plaintextCrc32c": strconv.FormatInt(checksum(pt), 10),
		"usedPrimary":     true,
		"protectionLevel": "SOFTWARE",
	}
}

// decodeField decodes a base64 bytes field and checks its optional CRC32C like the service
// does. A non-zero status means the call is answered with that status and body.
func decodeField(field, b64, crc string) ([]byte, int, any) {
	b, err := decodeBase64(b64)
	if err != nil {
		st, body := googleError(http.StatusBadRequest, fmt.Sprintf("Invalid value at '%s' (TYPE_BYTES), Base64 decoding failed", field))
		return nil, st, body
	}
	if crc != "" {
		want, err := strconv.ParseInt(crc, 10, 64)
		if err != nil || want != checksum(b) {
			st, body := googleError(http.StatusBadRequest, fmt.Sprintf("The checksum in field %s_crc32c did not match the data in field %s.", field, field))
			return nil, st, body
		}
	}
	return b, 0, nil
}

// decodeBase64 accepts both alphabets, padded or not, as proto3 JSON parsers do.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

func checksum(b []byte) int64 {
	return int64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// key returns the AEAD of a key name, creating it on first use.
func (f *Fake) key(name string) cipher.AEAD {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k, ok := f.keys[name]; ok {
		return k
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw) // never fails
	block, err := aes.NewCipher(raw)
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	k, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	f.keys[name] = k
	return k
}

func (f *Fake) nextFailure() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) == 0 {
		return 0, false
	}
	st := f.failures[0]
	f.failures = f.failures[1:]
	return st, true
}

// statuses are the canonical gRPC status names Google APIs report for HTTP codes.
var statuses = map[int]string{
	http.StatusBadRequest:          "INVALID_ARGUMENT",
	http.StatusUnauthorized:        "UNAUTHENTICATED",
	http.StatusForbidden:           "PERMISSION_DENIED",
	http.StatusNotFound:            "NOT_FOUND",
	http.StatusConflict:            "ABORTED",
	http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError: "INTERNAL",
	http.StatusNotImplemented:      "UNIMPLEMENTED",
	http.StatusServiceUnavailable:  "UNAVAILABLE",
	http.StatusGatewayTimeout:      "DEADLINE_EXCEEDED",
}

// googleError is Google's JSON error body for an HTTP status.
func googleError(status int, message string) (int, any) {
	name, ok := statuses[status]
	if !ok {
		name = "UNKNOWN"
	}
	if message == "" {
		message = "The service is currently unavailable."
		if status != http.StatusServiceUnavailable {
			message = http.StatusText(status)
		}
	}
	return status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": name}}
}
