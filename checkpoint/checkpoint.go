// Package checkpoint keeps a job's checkpoints in a JetStream object store
// on the job's own NATS server (DESIGN §6).
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
// checkpoints committed and removes the pieces of older or abandoned ones.
//
// The bucket of job J is "strads-ckpt-J", in file storage: with the
// embedded server's --store, or a server started with JetStream (strads
// server --store DIR, nats-server -js), it outlasts every process of the
// job.
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNone is matched by the error of Latest, and of Open without create,
// when the job has no checkpoint.
var ErrNone = errors.New("no checkpoint")

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
}

// history is the content of the manifest object: the manifests committed
// and kept, oldest first.
type history struct {
	Checkpoints []Manifest `json:"checkpoints"`
}

// Store is a job's checkpoint store.
type Store struct {
	obs jetstream.ObjectStore
	job string
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
		obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: Bucket(job), Description: "strads checkpoints of job " + job, Storage: jetstream.FileStorage,
		})
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
	return &Store{obs: obs, job: job}, nil
}

// object returns the name of piece of the checkpoint of round.
func object(round uint64, piece string) string {
	return fmt.Sprintf("%020d/%s", round, piece)
}

// Digest returns b's SHA-256, in hex, as a Manifest names it.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Put stores piece of the checkpoint of round and returns its digest.
func (s *Store) Put(ctx context.Context, round uint64, piece string, b []byte) (string, error) {
	if _, err := s.obs.PutBytes(ctx, object(round, piece), b); err != nil {
		return "", fmt.Errorf("checkpoint: store %s of round %d: %w", piece, round, err)
	}
	return Digest(b), nil
}

// Stat returns the digest and size of piece of the checkpoint of round, as
// the store computed them when it was stored, or an error matching ErrNone
// if it is not there.
func (s *Store) Stat(ctx context.Context, round uint64, piece string) (digest string, size int64, err error) {
	info, err := s.obs.GetInfo(ctx, object(round, piece))
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
	b, err := s.obs.GetBytes(ctx, object(round, piece))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s of round %d: %w", piece, round, err)
	}
	if d := Digest(b); d != digest {
		return nil, fmt.Errorf("checkpoint: %s of round %d: its digest is %.12s…, the manifest's %.12s…", piece, round, d, digest)
	}
	return b, nil
}

// history reads the manifests committed; an empty one if none was.
func (s *Store) history(ctx context.Context) (history, error) {
	var h history
	b, err := s.obs.GetBytes(ctx, manifestName)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("checkpoint: manifest: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("checkpoint: manifest of bucket %s: %w", Bucket(s.job), err)
	}
	return h, nil
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
	return h.Checkpoints[len(h.Checkpoints)-1], nil
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
			return m, nil
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
	cps := slices.DeleteFunc(h.Checkpoints, func(c Manifest) bool { return c.Round >= m.Round })
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

// prune removes the pieces that no manifest kept names, except those of
// rounds after last (a checkpoint being stored).
func (s *Store) prune(ctx context.Context, kept []Manifest, last uint64) error {
	objs, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: list: %w", err)
	}
	keep := map[uint64]bool{}
	for _, m := range kept {
		keep[m.Round] = true
	}
	var errs []error
	for _, o := range objs {
		r, _, ok := strings.Cut(o.Name, "/")
		if !ok {
			continue
		}
		round, err := strconv.ParseUint(r, 10, 64)
		if err != nil || keep[round] || round > last {
			continue
		}
		if err := s.obs.Delete(ctx, o.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: remove old pieces: %w", err)
	}
	return nil
}
