package checkpoint

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Verify checks, before m is committed, that every piece it names is
// stored with the digest it names, from the digests the server computed
// as the pieces came (no piece is read): the digests in m come from the
// roles' notices (protocol.Stored), which anyone who can publish on the
// job's subjects can forge, with a digest of their choosing, before the
// role's own notice comes (DESIGN §6).
func (s *Store) Verify(ctx context.Context, m Manifest) error {
	for piece, digest := range m.Pieces {
		info, err := s.obs.GetInfo(ctx, object(m.Round, piece))
		if err != nil {
			return fmt.Errorf("checkpoint: %s of round %d: %w", piece, m.Round, err)
		}
		sum, err := jetstream.DecodeObjectDigest(info.Digest)
		if err != nil {
			return fmt.Errorf("checkpoint: %s of round %d: %w", piece, m.Round, err)
		}
		if d := hex.EncodeToString(sum); d != digest {
			return fmt.Errorf("checkpoint: %s of round %d: its digest is %.12s…, the notice's %.12s…", piece, m.Round, d, digest)
		}
	}
	return nil
}
