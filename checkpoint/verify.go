package checkpoint

import (
	"context"
	"fmt"
	"slices"
)

// Verify checks, before m is committed, that every piece it names is
// stored with the digest it names, from the digests the store computed
// as the pieces came (Stat: no piece is read): the digests in m come from
// the roles' notices (protocol.Stored), which anyone who can publish on
// the job's subjects can forge, with a digest of their choosing, before
// the role's own notice comes (DESIGN "Checkpoints").
func (s *Store) Verify(ctx context.Context, m Manifest) error {
	for piece, digest := range m.Pieces {
		d, _, err := s.Stat(ctx, m.Round, piece)
		if err != nil {
			return err
		}
		if d != digest {
			return fmt.Errorf("checkpoint: %s of round %d: its digest is %.12s…, the notice's %.12s…", piece, m.Round, d, digest)
		}
	}
	return nil
}

// Settle makes m name every piece with the digest the store computed as
// it came (Stat), and its size, and returns the pieces whose digest in m
// differed (a notice forged before the role's own: DESIGN "Checkpoints"). A piece not
// stored is an error: m cannot be committed.
func (s *Store) Settle(ctx context.Context, m *Manifest) (changed []string, err error) {
	var total int64
	for piece, digest := range m.Pieces {
		d, size, err := s.Stat(ctx, m.Round, piece)
		if err != nil {
			return nil, err
		}
		if d != digest {
			changed = append(changed, piece)
			m.Pieces[piece] = d
		}
		total += size
	}
	m.Bytes = total
	slices.Sort(changed)
	return changed, nil
}
