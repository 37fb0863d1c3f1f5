package checkpoint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/strads-go/strads/checkpoint"
	"github.com/strads-go/strads/internal/testhelper"
)

// TestVerify checks that a manifest is verified against the pieces
// stored: as they were stored, it passes; a digest that is not the
// piece's (a forged notice), or a piece not stored, is an error naming
// the piece.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	s, err := checkpoint.Open(ctx, testhelper.InProcess(t, true), "j", true)
	if err != nil {
		t.Fatal(err)
	}
	m := put(t, s, 5, "coordinator", "worker-0")
	if err := s.Verify(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Pieces["worker-0"] = strings.Repeat("0f", 32)
	if err := s.Verify(ctx, m); err == nil || !strings.Contains(err.Error(), "worker-0 of round 5: its digest is") {
		t.Errorf("a forged digest: %v", err)
	}
	m.Pieces["worker-0"] = checkpoint.Digest([]byte("worker-05"))
	m.Pieces["worker-1"] = checkpoint.Digest(nil)
	if err := s.Verify(ctx, m); err == nil || !strings.Contains(err.Error(), "worker-1 of round 5") {
		t.Errorf("a piece not stored: %v", err)
	}
}
