package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/tink-crypto/tink-go/v2/aead"
	"github.com/tink-crypto/tink-go/v2/aead/aesgcm"
	"github.com/tink-crypto/tink-go/v2/insecuresecretdataaccess"
	"github.com/tink-crypto/tink-go/v2/secretdata"
	"github.com/tink-crypto/tink-go/v2/tink"
)

// Purposes name what a secret is; pass them to AD.
const (
	PurposeAccessToken  = "whatsapp_access_token" // a tenant's WhatsApp (Graph API) access token
	PurposeActionSecret = "action_secret"         // a tenant's action signing secret
	// PurposeConnectState is a connect link's state (internal/api), sealed under its own key
	// (CONNECT_STATE_KMS_KEY_NAME) by Split: the public api must open states, and that right
	// must not extend to the tenants' secrets.
	PurposeConnectState = "connect_state"
)

// Errors of Encrypt and Decrypt, for errors.Is. The returned errors wrap them with what failed.
var (
	// ErrNotAuthentic: the ciphertext does not open with this key and this associated data:
	// it was altered, belongs to another tenant or purpose, or was sealed under another key.
	ErrNotAuthentic = errors.New("ciphertext is not authentic for this key and associated data")
	// ErrKeyKind: the ciphertext was sealed with the other kind of key (the development key
	// versus Cloud KMS), e.g. data written in dev read by a production process.
	ErrKeyKind = errors.New("ciphertext was sealed with another kind of key")
	// ErrMalformed: the bytes are not a ciphertext of this package (or of a newer format).
	ErrMalformed = errors.New("not a secrets ciphertext")
	// ErrKMS: the Cloud KMS call failed (unreachable, timed out, permission denied, key
	// disabled). The original error is wrapped too.
	ErrKMS = errors.New("cloud kms call failed")
	// ErrNoAD: associated data is required, so that every ciphertext is bound to its place.
	ErrNoAD = errors.New("associated data is required")
	// ErrNoKey: a Split keeper holds no key for this purpose (the service is not meant to
	// handle such secrets).
	ErrNoKey = errors.New("no key for this purpose in this service")
)

// Unreadable reports a ciphertext no retry can open: sealed for another key, tenant or purpose,
// or damaged (ErrNotAuthentic, ErrKeyKind, ErrMalformed). A Cloud KMS failure (ErrKMS) is not:
// a retry may succeed.
func Unreadable(err error) bool {
	return errors.Is(err, ErrNotAuthentic) || errors.Is(err, ErrKeyKind) || errors.Is(err, ErrMalformed)
}

// Config chooses the key. Set KMSKeyName in staging and prod; leave it empty with Dev set to use
// the fixed development key.
type Config struct {
	// KMSKeyName is the Cloud KMS key (KMS_KEY_NAME), in full:
	// projects/P/locations/L/keyRings/R/cryptoKeys/K. It wins over Dev when set.
	KMSKeyName string
	// Dev allows the insecure development key when KMSKeyName is empty (APP_ENV=dev).
	Dev bool
	// Variable names the environment variable KMSKeyName comes from, for errors; empty means
	// KMS_KEY_NAME.
	Variable string
	// KMSEndpoint overrides the Cloud KMS REST endpoint (tests, private endpoints).
	KMSEndpoint string
	// HTTPClient, when set, carries every KMS call as is: it must add credentials itself (a plain
	// client talks to a fake without any). When nil, Application Default Credentials are used.
	HTTPClient *http.Client
}

// kmsKeyName is the shape of a Cloud KMS crypto key name (not a key version: Encrypt must use the
// key's primary version so that rotation works).
var kmsKeyName = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+$`)

// Validate reports a configuration New would refuse.
func (c Config) Validate() error {
	variable := c.Variable
	if variable == "" {
		variable = "KMS_KEY_NAME"
	}
	switch {
	case c.KMSKeyName != "" && !kmsKeyName.MatchString(c.KMSKeyName):
		return fmt.Errorf("%s: want projects/P/locations/L/keyRings/R/cryptoKeys/K, got %q", variable, c.KMSKeyName)
	case c.KMSKeyName == "" && !c.Dev:
		return fmt.Errorf("%s is required unless APP_ENV=dev (the development key protects nothing)", variable)
	}
	return nil
}

// Ciphertext prefix: a format version and the kind of key-encryption key. The prefix is also
// authenticated (it is part of the associated data the DEK seals with).
const (
	formatV1 byte = 1
	kindKMS  byte = 'k'
	kindDev  byte = 'd'

	headerLen = 2
)

func kindName(kind byte) string {
	switch kind {
	case kindKMS:
		return "Cloud KMS"
	case kindDev:
		return "the development key"
	}
	return "unknown key kind " + strconv.Itoa(int(kind))
}

// devKeyLabel derives the development key-encryption key. It is deliberately public: anyone
// can decrypt dev ciphertexts, which is why New accepts it only with Config.Dev.
const devKeyLabel = "wapipe/internal/secrets: INSECURE development key-encryption key, for APP_ENV=dev only"

// Keeper encrypts and decrypts secrets with one key, or, made by Split, with one key per
// purpose. It is safe for concurrent use.
type Keeper struct {
	kind     byte
	envelope tink.AEAD
	close    func() error

	// split is set on a Keeper made by Split: it only routes to these.
	split *split
}

// split is the routing of a Split keeper. Either side may be nil (that service has no such key).
type split struct{ tenant, state *Keeper }

// Split returns a Keeper that seals and opens connect-link states (AD with PurposeConnectState)
// with state and every other secret (access tokens, action secrets) with tenant, so that each
// purpose has its own key and each service is granted on each key only what it does (the api
// opens states but may only seal tokens). The purpose is read from the associated data, which
// every call carries and which the ciphertext is bound to: a secret cannot be steered to the
// other key without failing to open. Either keeper may be nil for a service that holds no such
// key; its purpose is then refused with ErrNoKey rather than sealed under the wrong key. Close
// closes both.
func Split(tenant, state *Keeper) *Keeper {
	return &Keeper{split: &split{tenant: tenant, state: state}}
}

// NewSplit opens the keepers of tenant (access tokens, action secrets) and state (connect
// states) and returns their Split. A nil Config means the service holds no key for those
// secrets (they are refused with ErrNoKey). Closing the result closes both.
func NewSplit(ctx context.Context, tenant, state *Config) (*Keeper, error) {
	var parts [2]*Keeper
	for i, cfg := range []*Config{tenant, state} {
		if cfg == nil {
			continue
		}
		k, err := New(ctx, *cfg)
		if err != nil {
			if parts[0] != nil {
				_ = parts[0].Close()
			}
			return nil, err
		}
		parts[i] = k
	}
	return Split(parts[0], parts[1]), nil
}

// route returns the keeper of ad's purpose.
func (s *split) route(ad []byte) (*Keeper, error) {
	k := s.tenant
	if purpose, ok := purposeOf(ad); ok && purpose == PurposeConnectState {
		k = s.state
	}
	if k == nil {
		return nil, ErrNoKey
	}
	return k, nil
}

// purposeOf reads the purpose back from an AD made by AD.
func purposeOf(ad []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(ad, []byte(adPrefix+"|tenant:"))
	if !ok {
		return "", false
	}
	if _, rest, ok = cutLengthPrefixed(rest); !ok {
		return "", false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("|purpose:")); !ok {
		return "", false
	}
	purpose, rest, ok := cutLengthPrefixed(rest)
	if !ok || len(rest) != 0 {
		return "", false
	}
	return string(purpose), true
}

// cutLengthPrefixed splits "<n>:<n bytes>rest" into the n bytes and rest.
func cutLengthPrefixed(b []byte) (value, rest []byte, ok bool) {
	digits, after, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return nil, nil, false
	}
	n, err := strconv.Atoi(string(digits))
	if err != nil || n < 0 || n > len(after) {
		return nil, nil, false
	}
	return after[:n], after[n:], true
}

// New returns a Keeper for cfg: Cloud KMS when cfg.KMSKeyName is set, the development key when
// it is empty and cfg.Dev is set, an error otherwise. It makes no KMS call; a wrong key name or
// missing permission shows on the first Encrypt or Decrypt.
func New(ctx context.Context, cfg Config) (*Keeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("secrets config: %w", err)
	}
	dek := aead.AES256GCMKeyTemplate()
	if cfg.KMSKeyName == "" {
		kek, err := devKEK()
		if err != nil {
			return nil, fmt.Errorf("secrets dev key: %w", err)
		}
		return &Keeper{
			kind:     kindDev,
			envelope: aead.NewKMSEnvelopeAEAD2(dek, kek),
			close:    func() error { return nil },
		}, nil
	}
	kek, closeKMS, err := newKMSAEAD(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Keeper{
		kind:     kindKMS,
		envelope: aead.NewKMSEnvelopeAEAD2(dek, kek),
		close:    closeKMS,
	}, nil
}

// devKEK is AES-256-GCM under the public development key.
func devKEK() (tink.AEAD, error) {
	key := sha256.Sum256([]byte(devKeyLabel))
	params, err := aesgcm.NewParameters(aesgcm.ParametersOpts{
		KeySizeInBytes: 32, IVSizeInBytes: 12, TagSizeInBytes: 16, Variant: aesgcm.VariantNoPrefix,
	})
	if err != nil {
		return nil, fmt.Errorf("aesgcm.NewParameters: %w", err)
	}
	k, err := aesgcm.NewKey(secretdata.NewBytesFromData(key[:], insecuresecretdataaccess.Token{}), 0, params)
	if err != nil {
		return nil, fmt.Errorf("aesgcm.NewKey: %w", err)
	}
	a, err := aesgcm.NewAEAD(k)
	if err != nil {
		return nil, fmt.Errorf("aesgcm.NewAEAD: %w", err)
	}
	return a, nil
}

// Dev reports whether the Keeper uses the insecure development key (for any purpose), e.g. for
// a start-up warning.
func (k *Keeper) Dev() bool {
	if k.split != nil {
		return (k.split.tenant != nil && k.split.tenant.Dev()) || (k.split.state != nil && k.split.state.Dev())
	}
	return k.kind == kindDev
}

// Close releases the KMS client (both, for a Split keeper). The Keeper must not be used
// afterwards.
func (k *Keeper) Close() error {
	if k.split != nil {
		var errs []error
		for _, part := range []*Keeper{k.split.tenant, k.split.state} {
			if part != nil {
				errs = append(errs, part.Close())
			}
		}
		return errors.Join(errs...)
	}
	if err := k.close(); err != nil {
		return fmt.Errorf("secrets close: %w", err)
	}
	return nil
}

// Encrypt seals plaintext, bound to ad (see AD). The result is safe to store; it differs on
// every call. With Cloud KMS it makes one KMS call.
func (k *Keeper) Encrypt(ctx context.Context, plaintext, ad []byte) ([]byte, error) {
	if len(ad) == 0 {
		return nil, fmt.Errorf("secrets encrypt: %w", ErrNoAD)
	}
	if k.split != nil {
		part, err := k.split.route(ad)
		if err != nil {
			return nil, fmt.Errorf("secrets encrypt: %w", err)
		}
		return part.Encrypt(ctx, plaintext, ad)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("secrets encrypt: %w", err)
	}
	header := []byte{formatV1, k.kind}
	body, err := k.envelope.Encrypt(plaintext, fullAD(header, ad))
	if err != nil {
		if kerr := (*kmsError)(nil); errors.As(err, &kerr) {
			return nil, fmt.Errorf("secrets encrypt: %w: %w", ErrKMS, kerr.err)
		}
		return nil, fmt.Errorf("secrets encrypt: %w", err)
	}
	return append(header, body...), nil
}

// Decrypt opens a ciphertext from Encrypt with the same ad. With Cloud KMS it makes one KMS
// call, except when the ciphertext is refused before (ErrMalformed, ErrKeyKind).
func (k *Keeper) Decrypt(ctx context.Context, ciphertext, ad []byte) ([]byte, error) {
	if len(ad) == 0 {
		return nil, fmt.Errorf("secrets decrypt: %w", ErrNoAD)
	}
	if k.split != nil {
		part, err := k.split.route(ad)
		if err != nil {
			return nil, fmt.Errorf("secrets decrypt: %w", err)
		}
		return part.Decrypt(ctx, ciphertext, ad)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("secrets decrypt: %w", err)
	}
	if len(ciphertext) <= headerLen || ciphertext[0] != formatV1 {
		return nil, fmt.Errorf("secrets decrypt: %w", ErrMalformed)
	}
	if kind := ciphertext[1]; kind != k.kind {
		if kind != kindKMS && kind != kindDev {
			return nil, fmt.Errorf("secrets decrypt: %w", ErrMalformed)
		}
		return nil, fmt.Errorf("secrets decrypt: %w (%s; this keeper uses %s)",
			ErrKeyKind, kindName(kind), kindName(k.kind))
	}
	pt, err := k.envelope.Decrypt(ciphertext[headerLen:], fullAD(ciphertext[:headerLen], ad))
	if err != nil {
		return nil, classifyDecrypt(err)
	}
	return pt, nil
}

// classifyDecrypt turns an envelope error into ErrKMS (the KMS call failed) or ErrNotAuthentic
// (the data key did not unwrap, or the secret did not open). Tink's own messages say nothing
// useful beyond that and carry no plaintext.
func classifyDecrypt(err error) error {
	var kerr *kmsError
	if errors.As(err, &kerr) && !kerr.invalidCiphertext() {
		return fmt.Errorf("secrets decrypt: %w: %w", ErrKMS, kerr.err)
	}
	return fmt.Errorf("secrets decrypt: %w", ErrNotAuthentic)
}

// fullAD is the associated data the DEK seals with: the ciphertext header, then the caller's ad.
func fullAD(header, ad []byte) []byte {
	out := make([]byte, 0, len(header)+len(ad))
	return append(append(out, header...), ad...)
}

// AD is the associated data for a tenant's secret: it binds a ciphertext to the tenant and the
// purpose (PurposeAccessToken, PurposeActionSecret), so a ciphertext copied to another tenant
// or field does not decrypt. The encoding is length-prefixed, hence unambiguous whatever the
// strings hold.
func AD(tenantID, purpose string) []byte {
	return fmt.Appendf(nil, adPrefix+"|tenant:%d:%s|purpose:%d:%s",
		len(tenantID), tenantID, len(purpose), purpose)
}

// adPrefix begins every AD: the format of the associated data, which purposeOf reads back.
const adPrefix = "wapipe/secrets/v1"
