package secrets

import (
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
)

// Config chooses the key. Set KMSKeyName in staging and prod; leave it empty with Dev set to use
// the fixed development key.
type Config struct {
	// KMSKeyName is the Cloud KMS key (KMS_KEY_NAME), in full:
	// projects/P/locations/L/keyRings/R/cryptoKeys/K. It wins over Dev when set.
	KMSKeyName string
	// Dev allows the insecure development key when KMSKeyName is empty (APP_ENV=dev).
	Dev bool
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
	switch {
	case c.KMSKeyName != "" && !kmsKeyName.MatchString(c.KMSKeyName):
		return fmt.Errorf("KMS_KEY_NAME: want projects/P/locations/L/keyRings/R/cryptoKeys/K, got %q", c.KMSKeyName)
	case c.KMSKeyName == "" && !c.Dev:
		return errors.New("KMS_KEY_NAME is required unless APP_ENV=dev (the development key protects nothing)")
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

// Keeper encrypts and decrypts secrets with one key. It is safe for concurrent use.
type Keeper struct {
	kind     byte
	envelope tink.AEAD
	close    func() error
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

// Dev reports whether the Keeper uses the insecure development key, e.g. for a start-up warning.
func (k *Keeper) Dev() bool { return k.kind == kindDev }

// Close releases the KMS client. The Keeper must not be used afterwards.
func (k *Keeper) Close() error {
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
	return fmt.Appendf(nil, "wapipe/secrets/v1|tenant:%d:%s|purpose:%d:%s",
		len(tenantID), tenantID, len(purpose), purpose)
}
