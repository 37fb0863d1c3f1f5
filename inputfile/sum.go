package inputfile

import (
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
)

// Sum returns the size and the CRC-32C (Castagnoli) of the whole content
// of the file at path, which roles compare to know that they read the same
// data. It reads the whole file (the processor's CRC instruction runs at
// several GB/s), once a process: a later Sum of the same file, unchanged
// (the same file, size and modification time), is remembered. A Remote
// that was not fetched whole gives its index's, with no read. Errors are
// Open's, or name the file.
func Sum(path string) (size int64, crc uint32, err error) {
	if r, ok := RemoteOf(path); ok {
		s := r.Summary()
		return s.Size, s.CRC32C, nil
	}
	f, err := Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	sumsMu.Lock()
	s, ok := sums[path]
	sumsMu.Unlock()
	if ok && os.SameFile(s.fi, fi) && s.fi.Size() == fi.Size() && s.fi.ModTime().Equal(fi.ModTime()) {
		return fi.Size(), s.crc, nil
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if n != fi.Size() {
		return 0, 0, fmt.Errorf("read %d bytes of %s, %d when opened: did the file change while it was read?", n, path, fi.Size())
	}
	sumsMu.Lock()
	sums[path] = sum{fi, h.Sum32()}
	sumsMu.Unlock()
	return n, h.Sum32(), nil
}

// sum is a file's CRC-32C, and the file it is of.
type sum struct {
	fi  os.FileInfo
	crc uint32
}

var (
	sumsMu sync.Mutex
	sums   = map[string]sum{}
)
