package libsvm

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/strads-go/strads/inputfile"
)

// Fingerprint identifies the contents of a data file, so that the roles of
// a job can check that they read the same data: the file's size and its
// CRC-32C (Castagnoli) checksum.
type Fingerprint struct {
	Size int64  `msgpack:"n"`
	CRC  uint32 `msgpack:"c"`
}

// String returns the size and the checksum, e.g. "1048576 bytes, crc32c 9a0b1c2d".
func (f Fingerprint) String() string {
	return fmt.Sprintf("%d bytes, crc32c %08x", f.Size, f.CRC)
}

// ErrDifferentData reports roles of one job that read different data.
var ErrDifferentData = errors.New("the workers read different data: every role of a job must read the same data file")

// FingerprintFile returns the fingerprint of the file at path
// (inputfile.Sum: the whole file, read once a process; a data set over
// NATS not fetched whole gives its index's).
func FingerprintFile(path string) (Fingerprint, error) {
	size, crc, err := inputfile.Sum(path)
	if err != nil {
		return Fingerprint{}, inputError(path, err)
	}
	return Fingerprint{Size: size, CRC: crc}, nil
}

// castagnoli is the CRC-32C table of fingerprints.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fingerprinter computes a Fingerprint of what a reader it wraps reads, so
// that a read of the whole file fingerprints it without a pass of its own.
// A nil *fingerprinter wraps nothing.
type fingerprinter struct {
	fp Fingerprint
}

// wrap returns r, reading through f.
func (f *fingerprinter) wrap(r io.Reader) io.Reader {
	if f == nil {
		return r
	}
	return readerFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		f.fp.Size += int64(n)
		f.fp.CRC = crc32.Update(f.fp.CRC, castagnoli, p[:n])
		return n, err
	})
}

// readerFunc is an io.Reader from a function.
type readerFunc func(p []byte) (int, error)

// Read implements io.Reader.
func (r readerFunc) Read(p []byte) (int, error) { return r(p) }
