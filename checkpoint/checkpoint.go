// Package checkpoint keeps a job's checkpoints in a JetStream object store
// on the job's own NATS server (DESIGN "Checkpoints").
//
// A checkpoint of round C is a set of pieces, one by role: the
// coordinator's (the app's state and the pipeline's, after the pull of C),
// every worker's and every scheduler part's (schmp.Snapshotter). Each role
// stores its own piece, under the checkpoint's round, and tells the
// coordinator its digest; once every piece is in, the coordinator commits
// the checkpoint by writing its manifest, which names every piece and its
// digest. A checkpoint is therefore whole or absent: a resume reads only
// what a manifest names, and a piece whose bytes do not hash to the digest
// the manifest names is refused. The store keeps the last Keep
// checkpoints committed and removes the pieces of older or abandoned ones
// at each commit, and (RemoveUncommitted) at the job's end.
//
// The manifests of job J are in the bucket "strads-ckpt-J", the pieces of
// its checkpoint of round C in "strads-ckpt-J-rC", deleted whole with the
// checkpoint. All are in file storage: with the
// embedded server's --store, or a server started with JetStream (strads
// server --store DIR, nats-server -js), it outlasts every process of the
// job.
package checkpoint

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/jsobject"
	"github.com/strads-go/strads/wire"
)

// ErrNone is matched by the error of Latest, and of Open without create,
// when the job has no checkpoint.
var ErrNone = errors.New("no checkpoint")

// ErrLost is matched by the error of Commit, Latest and Manifest when the
// server no longer has the job's bucket of manifests that the Store
// opened: a server restarted without its store, say. Recreate makes it
// again.
var ErrLost = errors.New("the server lost the job's checkpoints")

// ErrNoJetStream is matched by the error of Open when the server has no
// JetStream.
var ErrNoJetStream = errors.New("the NATS server has no JetStream")

// Bucket returns the name of job's bucket.
func Bucket(job string) string { return "strads-ckpt-" + job }

// manifestName is the object that holds the manifests committed.
const manifestName = "manifest"

// CoordinatorPiece is the name of the coordinator's piece.
const CoordinatorPiece = "coordinator"

// Piece returns the name of the piece of a worker's or scheduler part's
// place: "worker-3", "scheduler-0".
func Piece(role string, place int) string {
	return role + "-" + strconv.Itoa(place)
}

// Manifest describes a checkpoint committed.
type Manifest struct {
	// Job and Run name the job, and the run that took the checkpoint.
	Job string `json:"job"`
	Run string `json:"run"`
	// App is the app's name.
	App string `json:"app"`
	// Round is the checkpoint's round: the state after its pull.
	Round uint64 `json:"round"`
	// Workers and Schedulers are the job's numbers of worker shards and
	// scheduler parts.
	Workers    int `json:"workers"`
	Schedulers int `json:"schedulers"`
	// Settings and Data are the job's settings and data fingerprint
	// (protocol.Manifest), which a resumed job must have too.
	Settings map[string]string `json:"settings,omitempty"`
	Data     string            `json:"data,omitempty"`
	// Pieces names every piece's SHA-256 digest, in hex, by piece name.
	Pieces map[string]string `json:"pieces"`
	// Bytes is the pieces' total size.
	Bytes int64 `json:"bytes"`
	// Time is when the checkpoint was committed.
	Time time.Time `json:"time"`
	// MAC, in a job with a key, is the HMAC-SHA256 under the key of the
	// manifest without it (sealed by Commit, checked by Latest and
	// Manifest): someone who may write the job's bucket, but has no key,
	// cannot forge one (DESIGN "Hostile traffic").
	MAC string `json:"mac,omitempty"`
}

// ErrForgedManifest is wrapped in the error of Latest and Manifest, in a
// store with a key (OpenConn), for a manifest whose MAC does not verify:
// forged, or committed without the key.
var ErrForgedManifest = errors.New("manifest does not verify under the job key")

// sum returns the MAC of m under key, in hex.
func (m Manifest) sum(key wire.Key) string {
	m.MAC = ""
	b, err := json.Marshal(m)
	if err != nil {
		return "" // never: a Manifest always encodes
	}
	return hex.EncodeToString(key.Sum([]byte("strads checkpoint manifest"), b))
}

// verified returns m, or an error matching ErrForgedManifest if s has a
// key and m's MAC does not verify under it.
func (s *Store) verified(m Manifest) (Manifest, error) {
	if s.key.IsZero() || hmac.Equal([]byte(m.MAC), []byte(m.sum(s.key))) {
		return m, nil
	}
	return Manifest{}, fmt.Errorf("checkpoint: job %s: the checkpoint of round %d: %w (forged, or committed without this --key)", s.job, m.Round, ErrForgedManifest)
}

// history is the content of the manifest object: the manifests committed
// and kept, oldest first.
type history struct {
	Checkpoints []Manifest `json:"checkpoints"`
}

// Store is a job's checkpoint store. The manifests live in the job's
// bucket, the pieces of each checkpoint in a bucket of their own (Bucket
// and round), which is deleted whole when the checkpoint is no longer kept:
// JetStream's file store gives the space of a deleted stream back at once,
// that of objects deleted from a stream only lazily (30 checkpoints of
// 1 MiB, 2 kept, left 31 MB in one bucket).
type Store struct {
	js  jetstream.JetStream
	job string

	key wire.Key // the job's key (OpenConn); zero: none

	mu     sync.Mutex
	obs    jetstream.ObjectStore            // the manifests
	rounds map[uint64]jetstream.ObjectStore // the pieces' buckets opened
}

// roundBucket returns the name of the bucket of the pieces of the
// checkpoint of round.
func roundBucket(job string, round uint64) string {
	return fmt.Sprintf("%s-r%d", Bucket(job), round)
}

// pieces returns the bucket of the pieces of the checkpoint of round,
// created if create is set; otherwise a missing one is ErrNone.
func (s *Store) pieces(ctx context.Context, round uint64, create bool) (jetstream.ObjectStore, error) {
	s.mu.Lock()
	obs, ok := s.rounds[round]
	s.mu.Unlock()
	if ok {
		return obs, nil
	}
	name := roundBucket(s.job, round)
	var err error
	if create {
		obs, err = s.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: name, Description: fmt.Sprintf("strads checkpoint of round %d of job %s", round, s.job), Storage: jetstream.FileStorage,
		})
	} else {
		obs, err = s.js.ObjectStore(ctx, name)
	}
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("checkpoint: round %d: %w (bucket %s not found)", round, ErrNone, name)
	case err != nil:
		return nil, fmt.Errorf("checkpoint: bucket %s: %w", name, err)
	}
	s.mu.Lock()
	s.rounds[round] = obs
	s.mu.Unlock()
	return obs, nil
}

// manifests is the configuration of job's bucket of manifests.
func manifests(job string) jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{Bucket: Bucket(job), Description: "strads checkpoints of job " + job, Storage: jetstream.FileStorage}
}

// Open returns the checkpoint store of job on nc's server, creating its
// bucket if create is set; otherwise a missing bucket is ErrNone.
func Open(ctx context.Context, nc *nats.Conn, job string, create bool) (*Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var obs jetstream.ObjectStore
	if create {
		obs, err = js.CreateOrUpdateObjectStore(ctx, manifests(job))
	} else {
		obs, err = js.ObjectStore(ctx, Bucket(job))
	}
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("checkpoint: %w: start the server with JetStream (strads server --store DIR, or a whole job's --store DIR)", ErrNoJetStream)
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("checkpoint: job %s: %w (bucket %s not found)", job, ErrNone, Bucket(job))
	case err != nil:
		return nil, fmt.Errorf("checkpoint: bucket %s: %w", Bucket(job), err)
	}
	return &Store{js: js, obs: obs, job: job, rounds: map[uint64]jetstream.ObjectStore{}}, nil
}

// OpenConn is Open on c's connection, for c's job, with c's key: a store
// that seals the manifests it commits, and refuses those that do not
// verify (DESIGN "Hostile traffic").
func OpenConn(ctx context.Context, c *wire.Conn, create bool) (*Store, error) {
	s, err := Open(ctx, c.NATS(), c.Job(), create)
	if err != nil {
		return nil, err
	}
	s.key = c.Key()
	return s, nil
}

// Digest returns b's SHA-256, in hex, as a Manifest names it.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Put stores piece of the checkpoint of round and returns its digest.
func (s *Store) Put(ctx context.Context, round uint64, piece string, b []byte) (string, error) {
	obs, err := s.pieces(ctx, round, true)
	if err != nil {
		return "", err
	}
	if _, err := obs.PutBytes(ctx, piece, b); err != nil {
		return "", fmt.Errorf("checkpoint: store %s of round %d: %w", piece, round, err)
	}
	return Digest(b), nil
}

// Stat returns the digest and size of piece of the checkpoint of round, as
// the store computed them when it was stored, or an error matching ErrNone
// if it is not there.
func (s *Store) Stat(ctx context.Context, round uint64, piece string) (digest string, size int64, err error) {
	obs, err := s.pieces(ctx, round, false)
	if err != nil {
		return "", 0, err
	}
	info, err := obs.GetInfo(ctx, piece)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", 0, fmt.Errorf("checkpoint: %s of round %d: %w", piece, round, ErrNone)
	}
	if err != nil {
		return "", 0, fmt.Errorf("checkpoint: %s of round %d: %w", piece, round, err)
	}
	b64, ok := strings.CutPrefix(info.Digest, "SHA-256=")
	sum, derr := base64.URLEncoding.DecodeString(b64)
	if !ok || derr != nil || len(sum) != sha256.Size {
		return "", 0, fmt.Errorf("checkpoint: %s of round %d: a digest %q", piece, round, info.Digest)
	}
	return hex.EncodeToString(sum), int64(info.Size), nil
}

// Get returns piece of the checkpoint of round, which must hash to digest.
func (s *Store) Get(ctx context.Context, round uint64, piece, digest string) ([]byte, error) {
	obs, err := s.pieces(ctx, round, false)
	if err != nil {
		return nil, err
	}
	b, err := s.read(ctx, obs, roundBucket(s.job, round), piece)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s of round %d: %w", piece, round, err)
	}
	if d := Digest(b); d != digest {
		return nil, fmt.Errorf("checkpoint: %s of round %d: its digest is %.12s…, the manifest's %.12s…", piece, round, d, digest)
	}
	return b, nil
}

// read returns the object name of obs, the bucket called bucket, or an
// error matching jetstream.ErrObjectNotFound if it has none, through
// package jsobject: chunk by chunk, each request ended by ctx, not with
// ObjectStore.GetBytes, whose reader ignores a cancel, so that a read that
// a reconnect cancelled (Retry), or whose consumer an outage lost, waited
// the whole timeout, holding every later commit (DESIGN "Spares and replacement"). An object
// replaced meanwhile (a commit replaces the manifests) is read again.
func (s *Store) read(ctx context.Context, obs jetstream.ObjectStore, bucket, name string) ([]byte, error) {
	return jsobject.NewReader(s.js, bucket, 0).ReadAll(ctx, obs, name)
}

// history reads the manifests committed; an empty one if none was.
func (s *Store) history(ctx context.Context) (history, error) {
	var h history
	s.mu.Lock()
	obs := s.obs
	s.mu.Unlock()
	b, err := s.read(ctx, obs, Bucket(s.job), manifestName)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return h, nil
	}
	if err != nil {
		// A read of a stream that is gone may fail as one with no
		// responders (a direct get): ask the server.
		if _, serr := s.js.ObjectStore(ctx, Bucket(s.job)); errors.Is(serr, jetstream.ErrBucketNotFound) || errors.Is(serr, jetstream.ErrStreamNotFound) {
			return h, fmt.Errorf("checkpoint: job %s: %w (bucket %s not found)", s.job, ErrLost, Bucket(s.job))
		}
		return h, fmt.Errorf("checkpoint: manifest: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("checkpoint: manifest of bucket %s: %w", Bucket(s.job), err)
	}
	return h, nil
}

// Recreate makes the job's bucket of manifests again, after a commit
// failed with ErrLost; the checkpoints committed before are gone. The
// next commit removes the pieces of those stored meanwhile.
func (s *Store) Recreate(ctx context.Context) error {
	obs, err := s.js.CreateOrUpdateObjectStore(ctx, manifests(s.job))
	if err != nil {
		return fmt.Errorf("checkpoint: make bucket %s again: %w", Bucket(s.job), err)
	}
	s.mu.Lock()
	s.obs = obs
	clear(s.rounds)
	s.mu.Unlock()
	return nil
}

// Latest returns the manifest of the last checkpoint committed, or an
// error matching ErrNone.
func (s *Store) Latest(ctx context.Context) (Manifest, error) {
	h, err := s.history(ctx)
	if err != nil {
		return Manifest{}, err
	}
	if len(h.Checkpoints) == 0 {
		return Manifest{}, fmt.Errorf("checkpoint: job %s: %w committed", s.job, ErrNone)
	}
	return s.verified(h.Checkpoints[len(h.Checkpoints)-1])
}

// Manifest returns the manifest of the checkpoint of round, which must be
// one of those kept.
func (s *Store) Manifest(ctx context.Context, round uint64) (Manifest, error) {
	h, err := s.history(ctx)
	if err != nil {
		return Manifest{}, err
	}
	for _, m := range h.Checkpoints {
		if m.Round == round {
			return s.verified(m)
		}
	}
	return Manifest{}, fmt.Errorf("checkpoint: job %s: round %d: %w kept", s.job, round, ErrNone)
}

// Commit commits the checkpoint that m describes, whose pieces are all
// stored, keeping it and the keep−1 committed before it (at least 1), and
// removes every other piece of the bucket: of older checkpoints, and of
// those abandoned before their commit. A checkpoint of a round at or
// before the last committed one (a resumed run's) replaces those after
// it.
func (s *Store) Commit(ctx context.Context, m Manifest, keep int) error {
	h, err := s.history(ctx)
	if err != nil {
		return err
	}
	// With a key, manifests that do not verify are not kept.
	cps := slices.DeleteFunc(h.Checkpoints, func(c Manifest) bool {
		_, err := s.verified(c)
		return c.Round >= m.Round || err != nil
	})
	if !s.key.IsZero() {
		m.MAC = m.sum(s.key)
	}
	cps = append(cps, m)
	if len(cps) > max(keep, 1) {
		cps = cps[len(cps)-max(keep, 1):]
	}
	b, err := json.MarshalIndent(history{cps}, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: manifest: %w", err)
	}
	// The manifest object is replaced whole: readers see the old one
	// until the new one is in.
	if _, err := s.obs.PutBytes(ctx, manifestName, b); err != nil {
		return fmt.Errorf("checkpoint: commit round %d: %w", m.Round, err)
	}
	return s.prune(ctx, cps, m.Round)
}

// RemoveUncommitted removes the pieces of every checkpoint that no manifest
// kept names, of any round: those of checkpoints abandoned, or still being
// stored when their job ended, which no later commit of the job may come
// to remove. Only a job's coordinator calls it, at the job's end, when
// none of its checkpoints can be committed any more.
func (s *Store) RemoveUncommitted(ctx context.Context) error {
	h, err := s.history(ctx)
	if err != nil {
		return err
	}
	return s.prune(ctx, h.Checkpoints, ^uint64(0))
}

// prune deletes the buckets of the checkpoints that no manifest kept
// names, except those of rounds after last (a checkpoint being stored).
func (s *Store) prune(ctx context.Context, kept []Manifest, last uint64) error {
	keep := map[uint64]bool{}
	for _, m := range kept {
		keep[m.Round] = true
	}
	prefix := Bucket(s.job) + "-r"
	names := s.js.ObjectStoreNames(ctx)
	var old []uint64
	for name := range names.Name() {
		r, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		round, err := strconv.ParseUint(r, 10, 64)
		if err != nil || keep[round] || round > last {
			continue
		}
		old = append(old, round)
	}
	errs := []error{names.Error()}
	for _, round := range old {
		s.mu.Lock()
		delete(s.rounds, round)
		s.mu.Unlock()
		if err := s.js.DeleteObjectStore(ctx, roundBucket(s.job, round)); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: remove old checkpoints: %w", err)
	}
	return nil
}
