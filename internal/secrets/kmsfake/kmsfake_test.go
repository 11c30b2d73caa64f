package kmsfake_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/cloudkms/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/wapipe/wapipe/internal/secrets/kmsfake"
)

const keyName = "projects/p/locations/global/keyRings/r/cryptoKeys/k"

// newService is the generated Cloud KMS REST client pointed at a fresh fake.
func newService(t *testing.T) (*kmsfake.Fake, *cloudkms.Service) {
	t.Helper()
	fake := kmsfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	svc, err := cloudkms.NewService(t.Context(), option.WithEndpoint(srv.URL), option.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatalf("cloudkms.NewService: %v", err)
	}
	return fake, svc
}

func crc(b []byte) int64 { return int64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))) }

func encrypt(t *testing.T, svc *cloudkms.Service, name string, pt, aad []byte) *cloudkms.EncryptResponse {
	t.Helper()
	resp, err := svc.Projects.Locations.KeyRings.CryptoKeys.Encrypt(name, &cloudkms.EncryptRequest{
		Plaintext:                         base64.URLEncoding.EncodeToString(pt),
		PlaintextCrc32c:                   crc(pt),
		AdditionalAuthenticatedData:       base64.URLEncoding.EncodeToString(aad),
		AdditionalAuthenticatedDataCrc32c: crc(aad),
		ForceSendFields:                   []string{"PlaintextCrc32c", "AdditionalAuthenticatedDataCrc32c"},
	}).Context(t.Context()).Do()
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	return resp
}

func decrypt(t *testing.T, svc *cloudkms.Service, name, ct string, aad []byte) (*cloudkms.DecryptResponse, error) {
	t.Helper()
	return svc.Projects.Locations.KeyRings.CryptoKeys.Decrypt(name, &cloudkms.DecryptRequest{
		Ciphertext:                  ct,
		AdditionalAuthenticatedData: base64.StdEncoding.EncodeToString(aad),
	}).Context(t.Context()).Do()
}

func TestEncryptDecryptLikeCloudKMS(t *testing.T) {
	t.Parallel()
	fake, svc := newService(t)
	pt, aad := []byte("a data key \xff\xfe"), []byte("context")
	enc := encrypt(t, svc, keyName, pt, aad)
	if !enc.VerifiedPlaintextCrc32c || !enc.VerifiedAdditionalAuthenticatedDataCrc32c {
		t.Errorf("Encrypt verified flags = %v, %v; want both true", enc.VerifiedPlaintextCrc32c, enc.VerifiedAdditionalAuthenticatedDataCrc32c)
	}
	if want := keyName + "/cryptoKeyVersions/1"; enc.Name != want {
		t.Errorf("Encrypt name = %q; want %q", enc.Name, want)
	}
	ct, err := base64.StdEncoding.DecodeString(enc.Ciphertext)
	if err != nil {
		t.Fatalf("ciphertext is not standard base64: %v", err)
	}
	if enc.CiphertextCrc32c != crc(ct) {
		t.Errorf("ciphertextCrc32c = %d; want %d", enc.CiphertextCrc32c, crc(ct))
	}
	dec, err := decrypt(t, svc, keyName, enc.Ciphertext, aad)
	if err != nil {
		t.Fatalf("Decrypt: %v", err)
	}
	got, err := base64.StdEncoding.DecodeString(dec.Plaintext)
	if err != nil || !bytes.Equal(got, pt) || dec.PlaintextCrc32c != crc(pt) {
		t.Errorf("Decrypt = %q (crc %d), %v; want %q (crc %d)", got, dec.PlaintextCrc32c, err, pt, crc(pt))
	}

	var methods []string
	for _, c := range fake.Calls() {
		methods = append(methods, c.Method+" "+c.KeyName)
		if !bytes.Equal(c.Plaintext, pt) || !bytes.Equal(c.AAD, aad) {
			t.Errorf("recorded %s plaintext %q aad %q; want %q %q", c.Method, c.Plaintext, c.AAD, pt, aad)
		}
	}
	want := []string{"encrypt " + keyName, "decrypt " + keyName}
	if diff := cmp.Diff(want, methods); diff != "" {
		t.Errorf("Calls (-want, +got):\n%s", diff)
	}
}

func TestDecryptRefusesLikeCloudKMS(t *testing.T) {
	t.Parallel()
	_, svc := newService(t)
	enc := encrypt(t, svc, keyName, []byte("dek"), []byte("aad"))
	ct, _ := base64.StdEncoding.DecodeString(enc.Ciphertext)
	ct[len(ct)-1] ^= 1
	tests := []struct {
		name, key, ct string
		aad           []byte
	}{
		{"other aad", keyName, enc.Ciphertext, []byte("other")},
		{"other key", keyName + "2", enc.Ciphertext, []byte("aad")},
		{"altered", keyName, base64.StdEncoding.EncodeToString(ct), []byte("aad")},
		{"too short", keyName, "AAE=", []byte("aad")},
	}
	for _, tc := range tests {
		_, err := decrypt(t, svc, tc.key, tc.ct, tc.aad)
		var gerr *googleapi.Error
		if !errors.As(err, &gerr) || gerr.Code != http.StatusBadRequest || !strings.Contains(gerr.Body, `"INVALID_ARGUMENT"`) {
			t.Errorf("%s: Decrypt error = %v; want 400 INVALID_ARGUMENT", tc.name, err)
		}
	}
}

func TestChecksumMismatchIsRefused(t *testing.T) {
	t.Parallel()
	_, svc := newService(t)
	_, err := svc.Projects.Locations.KeyRings.CryptoKeys.Encrypt(keyName, &cloudkms.EncryptRequest{
		Plaintext:       base64.StdEncoding.EncodeToString([]byte("dek")),
		PlaintextCrc32c: crc([]byte("dek")) + 1,
	}).Context(t.Context()).Do()
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Code != http.StatusBadRequest || !strings.Contains(gerr.Message, "plaintext_crc32c") {
		t.Errorf("Encrypt with a wrong checksum: %v; want 400 naming plaintext_crc32c", err)
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	fake, svc := newService(t)
	fake.FailNext(2, http.StatusServiceUnavailable)
	for i := range 2 {
		_, err := svc.Projects.Locations.KeyRings.CryptoKeys.Encrypt(keyName, &cloudkms.EncryptRequest{
			Plaintext: base64.StdEncoding.EncodeToString([]byte("dek")),
		}).Context(t.Context()).Do()
		var gerr *googleapi.Error
		if !errors.As(err, &gerr) || gerr.Code != http.StatusServiceUnavailable || !strings.Contains(gerr.Body, `"UNAVAILABLE"`) {
			t.Errorf("call %d: %v; want 503 UNAVAILABLE", i+1, err)
		}
	}
	encrypt(t, svc, keyName, []byte("dek"), nil) // the third call succeeds
	if got, want := fake.CallCount(kmsfake.MethodEncrypt), 3; got != want {
		t.Errorf("CallCount(encrypt) = %d; want %d", got, want)
	}
	var statuses []int
	for _, c := range fake.Calls() {
		statuses = append(statuses, c.Status)
	}
	if diff := cmp.Diff([]int{503, 503, 200}, statuses); diff != "" {
		t.Errorf("recorded statuses (-want, +got):\n%s", diff)
	}
	fake.Reset()
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("Calls after Reset = %d; want 0", n)
	}
}

func TestUnknownPathIsNotFound(t *testing.T) {
	t.Parallel()
	fake := kmsfake.New()
	srv := fake.NewTestServer()
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(srv.URL+"/v1/"+keyName+":sign", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d; want 404", resp.StatusCode)
	}
	if c := fake.Calls(); len(c) != 1 || c[0].Method != kmsfake.MethodOther {
		t.Errorf("Calls = %+v; want one MethodOther", c)
	}
}
