package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/store"
)

// TestCommitTurnMedia: the file a turn fetched gives the stored message its MIME type, checked
// hash and size; the caption and file name stay as stored, so a deletion made while the turn ran
// stays erased (read back from Firestore).
func TestCommitTurnMedia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		erase               bool
		wantCaption, wantFn string
	}{
		{"kept", false, "invoice for Budi", "budi-invoice.pdf"},
		{"deleted during the turn", true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newEventStores(t)
			const conv = "conv_media"
			stored := &store.Media{MIMEType: "application/pdf", SHA256: "ab", Caption: "invoice for Budi", Filename: "budi-invoice.pdf"}
			if _, _, err := s.convs.AddInbound(ctx, conv, store.Message{MessageID: "wamid.DOC", Type: "document", Timestamp: 1, Media: stored}); err != nil {
				t.Fatal(err)
			}
			c, taken, err := s.convs.Acquire(ctx, conv, "H", time.Minute, &store.Touch{TenantID: "t", PhoneNumberID: "p", Contact: "c"})
			if err != nil || !taken {
				t.Fatalf("Acquire = %v, %v", taken, err)
			}
			if tc.erase {
				if _, err := s.convs.EraseMessage(ctx, conv, "wamid.DOC"); err != nil {
					t.Fatal(err)
				}
			}
			fetched := &store.Media{MIMEType: "application/pdf", SHA256: "cd", Size: 1234, Caption: "invoice for Budi", Filename: "budi-invoice.pdf"}
			if _, err := s.convs.CommitTurn(ctx, conv, c.Lease, "wamid.DOC", store.TurnCommit{Media: fetched}, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := s.convs.GetMessage(ctx, conv, "wamid.DOC")
			if err != nil {
				t.Fatal(err)
			}
			want := store.Media{MIMEType: "application/pdf", SHA256: "cd", Size: 1234, Caption: tc.wantCaption, Filename: tc.wantFn}
			if got.Media == nil || *got.Media != want {
				t.Errorf("stored media %+v, want %+v", got.Media, want)
			}
		})
	}
}
