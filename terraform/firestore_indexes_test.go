package terraform

import (
	"testing"

	"github.com/wapipe/wapipe/internal/testenv"
)

// TestFirestoreIndexesAreValid: the indexes of firestore.tf are ones Firestore accepts, each
// declared once. Whether every query the code runs has its index is checked where the queries
// run: by every integration test binary (testenv.RunWithFirestore records them).
func TestFirestoreIndexesAreValid(t *testing.T) {
	t.Parallel()
	c, err := testenv.LoadIndexConfig()
	if err != nil {
		t.Fatalf("read firestore.tf: %v", err)
	}
	for _, err := range c.Validate() {
		t.Error(err)
	}
	if len(c.Composite) == 0 {
		t.Error("no google_firestore_index read from firestore.tf: the parser no longer understands it")
	}
}
