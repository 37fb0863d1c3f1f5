package protocol

import (
	"fmt"
	"hash/maphash"
)

// Ledger remembers the messages that a node took from one sender, one per
// round, by a hash of their bytes, so that a message under a round already
// taken is told apart: the same bytes are a replay, to be dropped
// (DropDuplicate); other bytes are a conflict (ErrConflict): two senders
// claim to be one, and the job cannot know which is real (DESIGN "Hostile traffic"). It
// costs 8 bytes a round.
type Ledger struct {
	seed   maphash.Seed
	hashes []uint64 // by round − 1; 0: none taken
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{seed: maphash.MakeSeed()} }

// Hash returns the hash of a message's bytes, for Check and Take.
func (l *Ledger) Hash(data []byte) uint64 { return maphash.Bytes(l.seed, data) | 1 }

// Check reports whether a message was taken for round already: if so, err
// is nil when the message hashed h has the same bytes, and matches
// ErrConflict when it differs.
func (l *Ledger) Check(round, h uint64) (taken bool, err error) {
	if round == 0 || round > uint64(len(l.hashes)) || l.hashes[round-1] == 0 {
		return false, nil
	}
	if l.hashes[round-1] != h {
		return true, fmt.Errorf("round %d: %w", round, ErrConflict)
	}
	return true, nil
}

// Take records the message hashed h as the one taken for round. Take only
// rounds that the job has reached: the ledger grows to the largest.
func (l *Ledger) Take(round, h uint64) {
	if round == 0 {
		return
	}
	if n := uint64(len(l.hashes)); n < round {
		l.hashes = append(l.hashes, make([]uint64, round-n)...)
	}
	l.hashes[round-1] = h
}
