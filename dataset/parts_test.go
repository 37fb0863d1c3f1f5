package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/strads-go/strads/dataset"
	"github.com/strads-go/strads/inputfile"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/libsvm"
	"github.com/strads-go/strads/protocol"
)

// lines returns n random lines of 1 to 60 bytes, the last without '\n' if
// open.
func lines(seed uint64, n int, open bool) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, "%d", i)
		for range r.IntN(60) {
			b = append(b, byte('a'+r.IntN(26)))
		}
		if i < n-1 || !open {
			b = append(b, '\n')
		}
	}
	return b
}

// lineStarts returns the offset of every line of b, and len(b).
func lineStarts(b []byte) []int {
	starts := []int{0}
	for i, c := range b {
		if c == '\n' && i+1 < len(b) {
			starts = append(starts, i+1)
		}
	}
	if len(b) == 0 {
		starts = starts[:0]
	}
	return append(starts, len(b))
}

// bucket returns the raw object store of the data sets of nc.
func bucket(t *testing.T, nc *nats.Conn) jetstream.ObjectStore {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(context.Background(), dataset.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// objects returns the names of the objects in obs.
func objects(t *testing.T, obs jetstream.ObjectStore) []string {
	t.Helper()
	ois, err := obs.List(context.Background())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, oi := range ois {
		names = append(names, oi.Name)
	}
	return names
}

// TestParts stores contents of various shapes in small blocks and checks
// that Get gives them back, that a Part's ranges of lines start at or
// before the line asked for with the whole's lines from there, fetching
// only the blocks that hold them, and that Fetch gives the whole.
func TestParts(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	const block = 1000
	st.SetBlock(block)
	long := append(bytes.Repeat([]byte("x"), 5*block), '\n')
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"lines", lines(1, 500, false)},
		{"open-ended", lines(2, 300, true)},
		{"a long line", append(append(lines(3, 40, false), long...), lines(4, 40, false)...)},
		{"one line", []byte("1 1:1\n")},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			in, err := st.Put(ctx, name, bytes.NewReader(tc.data), uint64(len(tc.data)))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if gin, err := st.Get(ctx, name, &got); err != nil || !bytes.Equal(got.Bytes(), tc.data) || gin.Name != in.Name || gin.Size != in.Size || gin.Digest != in.Digest {
				t.Fatalf("Get: %d bytes, %+v, %v; want the %d put, %+v", got.Len(), gin, err, len(tc.data), in)
			}
			path := filepath.Join(t.TempDir(), name)
			p, err := st.OpenPart(ctx, name, path)
			if err != nil {
				t.Fatal(err)
			}
			starts := lineStarts(tc.data)
			n := len(starts) - 1
			local := filepath.Join(t.TempDir(), "local")
			if err := os.WriteFile(local, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			fp, err := protocol.Fingerprint(local)
			if err != nil {
				t.Fatal(err)
			}
			// A role reading the data set and one reading a copy agree.
			if s := p.Summary(); s.Lines != n || s.Size != int64(len(tc.data)) || s.Name != "nats:"+name || s.Fingerprint != fp {
				t.Errorf("Summary: %+v, want %d lines of %d bytes, fingerprint %s", s, n, len(tc.data), fp)
			}
			for _, r := range [][2]int{{0, 1}, {n / 3, n / 2}, {max(n-1, 0), n}, {n, n}, {0, n}} {
				before := p.Fetched()
				rc, first, err := p.Lines(r[0], r[1])
				if err != nil {
					t.Fatalf("Lines(%d, %d): %v", r[0], r[1], err)
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				if first > r[0] || first < 0 {
					t.Fatalf("Lines(%d, %d) starts at line %d", r[0], r[1], first)
				}
				if r[0] >= n {
					if len(b) != 0 {
						t.Errorf("Lines(%d, %d) past the end: %d bytes", r[0], r[1], len(b))
					}
					continue
				}
				if want := tc.data[starts[first]:]; !bytes.HasPrefix(want, b) || len(b) < starts[max(r[1], r[0]+1)]-starts[first] {
					t.Errorf("Lines(%d, %d) from line %d: %d bytes, not the whole's %d bytes from there", r[0], r[1], first, len(b), starts[max(r[1], r[0]+1)]-starts[first])
				}
				// Not more than the blocks of the range, each at most a
				// block and a line.
				if got, most := p.Fetched()-before, int64(starts[max(r[1], r[0]+1)]-starts[r[0]]+2*(block+len(long))); got > most {
					t.Errorf("Lines(%d, %d) fetched %d bytes, more than %d", r[0], r[1], got, most)
				}
			}
			if err := p.Fetch(); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, tc.data) {
				t.Errorf("Fetch: %d bytes, %v; want the %d put", len(b), err, len(tc.data))
			}
		})
	}
	// A part of a large data set fetches about its part.
	data := lines(5, 5000, false)
	if _, err := st.Put(ctx, "big", bytes.NewReader(data), uint64(len(data))); err != nil {
		t.Fatal(err)
	}
	p, err := st.OpenPart(ctx, "big", filepath.Join(t.TempDir(), "big"))
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := p.Lines(2000, 2500)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got, whole := p.Fetched(), int64(len(data)); got <= 0 || got > whole/10+2*block {
		t.Errorf("lines [2000, 2500) of 5000 fetched %d of %d bytes", got, whole)
	}
}

// TestReplaceRemove checks that a put over a data set leaves only the new
// one's blocks, that rm removes every object of the data set, and that ls
// lists data sets, not blocks.
func TestReplaceRemove(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	st.SetBlock(500)
	obs := bucket(t, nc)
	a, b := lines(1, 200, false), lines(2, 100, false)
	for _, data := range [][]byte{a, b} {
		if _, err := st.Put(ctx, "d", bytes.NewReader(data), uint64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, "other", bytes.NewReader(a), uint64(len(a))); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := st.Get(ctx, "d", &got); err != nil || !bytes.Equal(got.Bytes(), b) {
		t.Errorf("Get after a second put: %d bytes, %v; want the second's %d", got.Len(), err, len(b))
	}
	count := func(prefix string) int {
		n := 0
		for _, o := range objects(t, obs) {
			if strings.HasPrefix(o, prefix) {
				n++
			}
		}
		return n
	}
	if n, want := count("d/"), (len(b)+499)/500; n > want || n == 0 {
		t.Errorf("%d blocks of d after a second put, want at most %d (the second's)", n, want)
	}
	if ins, err := st.List(ctx); err != nil || len(ins) != 2 || ins[0].Size != uint64(len(b)) || ins[1].Size != uint64(len(a)) {
		t.Errorf("List: %+v, %v; want d and other, of %d and %d bytes", ins, err, len(b), len(a))
	}
	// A put that fails leaves the data set as it was, and no block.
	before := count("d/")
	big := lines(3, 40000, false) // more than the fingerprint samples
	if _, err := st.Put(ctx, "d", &failing{bytes.NewReader(big), 100000}, uint64(len(big))); err == nil || !strings.Contains(err.Error(), "nats:d") {
		t.Errorf("a put whose file fails: got %v, want an error naming nats:d", err)
	}
	got.Reset()
	if _, err := st.Get(ctx, "d", &got); err != nil || !bytes.Equal(got.Bytes(), b) {
		t.Errorf("Get after a failed put: %d bytes, %v; want the last good put's %d", got.Len(), err, len(b))
	}
	if n := count("d/"); n != before {
		t.Errorf("%d blocks of d after a failed put, want the %d before it", n, before)
	}
	if err := st.Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if n := count("d"); n != 0 {
		t.Errorf("%d objects of d left after Delete", n)
	}
	if count("other/") == 0 {
		t.Error("Delete of d removed other's blocks")
	}
}

// TestBroken checks that a truncated or forged index, a missing block and
// a changed block are errors matching ErrIndex that name the data set, for
// Get, OpenPart and a Part's reads.
func TestBroken(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	st.SetBlock(300)
	obs := bucket(t, nc)
	data := lines(1, 100, false)
	put := func() {
		t.Helper()
		if _, err := st.Put(ctx, "d", bytes.NewReader(data), uint64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	// setIndex stores the index changed by edit, with its metadata.
	setIndex := func(edit func(string) string) {
		t.Helper()
		oi, err := obs.GetInfo(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		b, err := obs.GetBytes(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "d", Metadata: oi.Metadata}, strings.NewReader(edit(string(b)))); err != nil {
			t.Fatal(err)
		}
	}
	blocks := func() []string {
		var bs []string
		for _, o := range objects(t, obs) {
			if strings.HasPrefix(o, "d/") {
				bs = append(bs, o)
			}
		}
		return bs
	}
	for _, tc := range []struct {
		name   string
		break_ func()
		want   string
		blocks bool // the index is sound: OpenPart takes it
	}{
		{"truncated index", func() { setIndex(func(s string) string { return s[:len(s)/2] }) }, "is not one", false},
		{"forged size", func() { setIndex(func(s string) string { return strings.Replace(s, `"lines":100`, `"lines":99`, 1) }) }, "lines", false},
		{"a block dropped", func() {
			setIndex(func(s string) string {
				i := strings.Index(s, `{"object"`)
				j := strings.Index(s[i+1:], `{"object"`) + i + 1
				return s[:i] + s[j:]
			})
		}, "lists blocks", false},
		{"missing block", func() {
			if err := obs.Delete(ctx, blocks()[1]); err != nil {
				t.Fatal(err)
			}
		}, "is missing", true},
		{"changed block", func() {
			name := blocks()[0]
			b, err := obs.GetBytes(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			b[0] ^= 1
			if _, err := obs.PutBytes(ctx, name, b); err != nil {
				t.Fatal(err)
			}
		}, "the index says", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// rm removes every block, those of a broken index too.
			if err := st.Delete(ctx, "d"); err != nil && !errors.Is(err, dataset.ErrNotFound) {
				t.Fatal(err)
			}
			put()
			tc.break_()
			_, gerr := st.Get(ctx, "d", io.Discard)
			p, perr := st.OpenPart(ctx, "d", filepath.Join(t.TempDir(), "d"))
			errs := []error{gerr, perr}
			if tc.blocks {
				if perr != nil {
					t.Fatalf("OpenPart: %v", perr)
				}
				errs = errs[:1]
				rc, _, lerr := p.Lines(0, 100)
				if rc != nil {
					rc.Close()
				}
				errs = append(errs, lerr, p.Fetch())
			}
			for i, err := range errs {
				if !errors.Is(err, dataset.ErrIndex) || !strings.Contains(err.Error(), "nats:d") || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want ErrIndex naming nats:d and saying %q", []string{"Get", "OpenPart or Lines", "Fetch"}[i], err, tc.want)
				}
			}
		})
	}
}

// TestStoredWhole checks that a data set stored whole, as strads stored
// them before indexes, is still listed, got, fetched and removed, and
// that OpenPart says it has no parts.
func TestStoredWhole(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	data := lines(1, 100, false)
	if _, err := bucket(t, nc).PutBytes(ctx, "old", data); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	in, err := st.Get(ctx, "old", &got)
	if err != nil || !bytes.Equal(got.Bytes(), data) || in.Size != uint64(len(data)) {
		t.Errorf("Get: %d bytes, %+v, %v", got.Len(), in, err)
	}
	// The same digest as the same content stored with an index.
	nin, err := st.Put(ctx, "new", bytes.NewReader(data), uint64(len(data)))
	if err != nil || nin.Digest != in.Digest {
		t.Errorf("the digests of a content stored whole and in blocks: %s, %s (%v)", in.Digest, nin.Digest, err)
	}
	if _, err := st.OpenPart(ctx, "old", filepath.Join(t.TempDir(), "old")); !errors.Is(err, dataset.ErrNoIndex) {
		t.Errorf("OpenPart: got %v, want ErrNoIndex", err)
	}
	path, _, err := st.Fetch(ctx, "old", t.TempDir())
	if b, rerr := os.ReadFile(path); err != nil || rerr != nil || !bytes.Equal(b, data) {
		t.Errorf("Fetch: %v, %v", err, rerr)
	}
	if ins, err := st.List(ctx); err != nil || len(ins) != 2 {
		t.Errorf("List: %+v, %v", ins, err)
	}
	if err := st.Delete(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "old"); !errors.Is(err, dataset.ErrNotFound) {
		t.Errorf("Stat after Delete: %v", err)
	}
}

// TestPartReadRange registers a Part with package inputfile and reads a
// range of its rows with package libsvm, as a worker does: the count and
// the rows come without the rest of the data set, and a bad row is a
// *libsvm.ParseError of its line in the whole.
func TestPartReadRange(t *testing.T) {
	ctx := context.Background()
	nc := testhelper.InProcess(t, true)
	st, err := dataset.Open(ctx, nc, 5*time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	st.SetBlock(200)
	var data []byte
	for i := range 100 {
		if i == 79 {
			data = append(data, "1 1:x\n"...)
			continue
		}
		data = fmt.Appendf(data, "%d 1:%d 2:1\n", i%2, i+1)
	}
	if _, err := st.Put(ctx, "d.svm", bytes.NewReader(data), uint64(len(data))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.svm")
	p, err := st.OpenPart(ctx, "d.svm", path)
	if err != nil {
		t.Fatal(err)
	}
	defer inputfile.Register(path, p)()
	if n, err := libsvm.CountRows(path); n != 100 || err != nil {
		t.Errorf("CountRows: %d, %v; want 100", n, err)
	}
	var lines []int
	err = libsvm.ReadRange(path, 10, 20, func(line int, _ libsvm.Row) error {
		lines = append(lines, line)
		return nil
	})
	if err != nil || len(lines) != 10 || lines[0] != 11 || lines[9] != 20 {
		t.Errorf("rows [10, 20): lines %v, %v; want 11 to 20", lines, err)
	}
	if f := p.Fetched(); f <= 0 || f > int64(len(data)/2) {
		t.Errorf("rows [10, 20) of 100 fetched %d of %d bytes", f, len(data))
	}
	var pe *libsvm.ParseError
	err = libsvm.ReadRange(path, 50, 100, func(int, libsvm.Row) error { return nil })
	if !errors.As(err, &pe) || pe.Line != 80 || pe.File != path {
		t.Errorf("rows [50, 100) with line 80 bad: got %v, want a *libsvm.ParseError of %s:80", err, path)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading ranges made the whole copy: %v", err)
	}
}

// failing is a ReaderAt whose reads of the byte at bad fail.
type failing struct {
	r   *bytes.Reader
	bad int64
}

func (f *failing) ReadAt(p []byte, off int64) (int, error) {
	if off <= f.bad && f.bad < off+int64(len(p)) {
		return 0, errors.New("disk on fire")
	}
	return f.r.ReadAt(p, off)
}
