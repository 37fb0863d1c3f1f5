package protocol

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestFingerprint checks that copies of a file agree, and that a file of
// another size, or that differs in any one byte, does not: the probe of
// issue 28 changed values between the blocks that an older, sampled
// fingerprint read, and a scheduler reading that copy was admitted.
func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const big = 3<<20 + 12345
	cases := []struct {
		name  string
		size  int
		flip  int64 // the byte changed in the other copy; −1: none
		grow  bool  // the other copy has one more byte
		equal bool
	}{
		{"empty copy", 0, -1, false, true},
		{"small copy", 1000, -1, false, true},
		{"small, a byte", 1000, 999, false, false},
		{"small, longer", 1000, -1, true, false},
		{"big copy", big, -1, false, true},
		{"big, the first byte", big, 0, false, false},
		{"big, the last byte", big, big - 1, false, false},
		{"big, longer", big, -1, true, false},
		// Where the sampled fingerprint of protocol version 7 read nothing.
		{"big, between blocks", big, 3*((big-64<<10)/15) + 64<<10 + 10, false, false},
		{"big, a middle byte", big, big / 2, false, false},
	}
	format := regexp.MustCompile(`^(\d+)-[0-9a-f]{8}$`)
	for i, tc := range cases {
		data := make([]byte, tc.size)
		for k := range data {
			data[k] = byte(rng.Uint32())
		}
		a, b := filepath.Join(dir, strconv.Itoa(i)+"a"), filepath.Join(dir, strconv.Itoa(i)+"b")
		other := append([]byte(nil), data...)
		if tc.flip >= 0 {
			other[tc.flip]++
		}
		if tc.grow {
			other = append(other, 0)
		}
		if err := os.WriteFile(a, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, other, 0o600); err != nil {
			t.Fatal(err)
		}
		fa, err := Fingerprint(a)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := Fingerprint(b)
		if err != nil {
			t.Fatal(err)
		}
		if m := format.FindStringSubmatch(fa); m == nil || m[1] != strconv.Itoa(tc.size) {
			t.Errorf("%s: fingerprint %q, want <size %d>-<8 hex digits>", tc.name, fa, tc.size)
		}
		if (fa == fb) != tc.equal {
			t.Errorf("%s: %s and %s, want equal %v", tc.name, fa, fb, tc.equal)
		}
	}
	if _, err := Fingerprint(filepath.Join(dir, "missing")); err == nil {
		t.Error("no error for a missing file")
	}
}

// TestManifestCheck checks the refusals of Check and their wording.
func TestManifestCheck(t *testing.T) {
	job := Manifest{App: "lasso", Version: Version, Settings: map[string]string{"lambda": "0.1", "rho": "0.5"}}
	cases := []struct {
		role Manifest
		want string
	}{
		{Manifest{App: "lasso", Version: Version}, ""},
		{Manifest{Version: Version, Settings: map[string]string{"rho": "0.5"}}, ""},
		{Manifest{App: "lasso", Version: Version, Data: "1-00"}, ""}, // Data: the coordinator's
		{Manifest{App: "lda", Version: Version}, `app is "lda", the job's is "lasso"`},
		{Manifest{App: "lasso"}, `protocol version is 0, the job's is ` + strconv.Itoa(Version)},
		{Manifest{Version: Version, Settings: map[string]string{"rho": "0.5", "lambda": "0.2"}}, `setting "lambda" is 0.2, the job's is 0.1`},
		// The first in the order of the names.
		{Manifest{Version: Version, Settings: map[string]string{"seed": "1", "rho": "1"}}, `setting "rho" is 1, the job's is 0.5`},
		{Manifest{Version: Version, Settings: map[string]string{"seed": "1"}}, `setting "seed" is 1, the job has no such setting`},
	}
	for _, tc := range cases {
		err := job.Check(tc.role)
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("Check(%+v) = %v, want %q", tc.role, err, tc.want)
		}
	}
}

// TestFingerprintNotRegular checks that a FIFO, a device and a directory
// are refused at once, not read (the FIFO's open would wait for a writer,
// /dev/zero would never end).
func TestFingerprintNotRegular(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or /dev/zero")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, path := range []string{fifo, "/dev/zero", dir} {
		if _, err := Fingerprint(path); err == nil || !strings.Contains(err.Error(), path+": not a regular file") {
			t.Errorf("Fingerprint(%s): got %v, want an error naming it as not a regular file", path, err)
		}
	}
}
