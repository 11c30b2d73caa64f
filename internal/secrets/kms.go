package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tink-crypto/tink-go-gcpkms/v2/integration/gcpkms"
	"github.com/tink-crypto/tink-go/v2/tink"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// kmsCallTimeout bounds one KMS call: Tink's REST AEAD takes no context, so without it a stalled
// connection would hold a request until the platform gives up. KMS answers in milliseconds.
const kmsCallTimeout = 10 * time.Second

// newKMSAEAD returns the Cloud KMS AEAD of cfg.KMSKeyName (Tink, REST transport), its errors
// marked as KMS errors, and the function that closes it.
func newKMSAEAD(ctx context.Context, cfg Config) (tink.AEAD, func() error, error) {
	// The client libraries log request and response bodies at debug level when
	// GOOGLE_SDK_GO_LOGGING_LEVEL asks them to; here those bodies hold data keys in clear, so
	// their logger is silenced whatever the environment says.
	quiet := option.WithLogger(slog.New(slog.DiscardHandler))
	hc := cfg.HTTPClient
	if hc == nil {
		// An authenticated client (Application Default Credentials) with a timeout; Tink's own
		// default has none.
		authed, _, err := htransport.NewClient(ctx, quiet, option.WithScopes("https://www.googleapis.com/auth/cloudkms"))
		if err != nil {
			return nil, nil, fmt.Errorf("secrets kms credentials: %w", err)
		}
		hc = &http.Client{Transport: authed.Transport, Timeout: kmsCallTimeout}
	}
	opts := []option.ClientOption{option.WithHTTPClient(hc), quiet}
	if cfg.KMSEndpoint != "" {
		opts = append(opts, option.WithEndpoint(cfg.KMSEndpoint))
	}
	client, err := gcpkms.NewClient(ctx, "gcp-kms://",
		gcpkms.WithTransport(gcpkms.TransportREST), gcpkms.WithGoogleAPIClientOptions(opts...))
	if err != nil {
		return nil, nil, fmt.Errorf("gcpkms.NewClient: %w", err)
	}
	remote, err := client.GetAEAD("gcp-kms://" + cfg.KMSKeyName)
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("gcpkms GetAEAD: %w", err)
	}
	closeFn := func() error {
		if cfg.HTTPClient == nil {
			hc.CloseIdleConnections()
		}
		return client.Close()
	}
	return markedAEAD{remote}, closeFn, nil
}

// markedAEAD marks the errors of the KMS AEAD, so that the envelope's failures can be told apart:
// a KMS call that failed versus data that does not decrypt locally.
type markedAEAD struct{ remote tink.AEAD }

func (m markedAEAD) Encrypt(plaintext, associatedData []byte) ([]byte, error) {
	ct, err := m.remote.Encrypt(plaintext, associatedData)
	if err != nil {
		return nil, &kmsError{err: err}
	}
	return ct, nil
}

func (m markedAEAD) Decrypt(ciphertext, associatedData []byte) ([]byte, error) {
	pt, err := m.remote.Decrypt(ciphertext, associatedData)
	if err != nil {
		return nil, &kmsError{err: err}
	}
	return pt, nil
}

// kmsError is an error of a KMS call. The wrapped error is the client's (a *googleapi.Error for
// an HTTP answer); it holds the key name and KMS's message, never plaintext.
type kmsError struct{ err error }

func (e *kmsError) Error() string { return "cloud kms: " + e.err.Error() }
func (e *kmsError) Unwrap() error { return e.err }

// invalidCiphertext reports KMS's answer to a wrapped data key it cannot decrypt (altered, or
// made under another key): 400 INVALID_ARGUMENT. Other 400s, such as FAILED_PRECONDITION for a
// disabled key version, stay KMS errors: the data may be fine.
func (e *kmsError) invalidCiphertext() bool {
	var gerr *googleapi.Error
	if !errors.As(e.err, &gerr) || gerr.Code != http.StatusBadRequest {
		return false
	}
	var body struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(gerr.Body), &body); err != nil {
		return false
	}
	return body.Error.Status == "INVALID_ARGUMENT"
}
