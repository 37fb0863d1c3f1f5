package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/strads-go/strads/wire"
)

// maxKeyFile bounds the size of a key file: a key is 32 bytes or so, its
// text twice that.
const maxKeyFile = 4096

// LoadKey reads the job key in the file at path (see wire.ParseKey): at
// least 32 random bytes, or their hex or base64 text, in a regular file
// that only its owner may read or write. Its errors name the file, never
// the key.
func LoadKey(path string) (wire.Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return wire.Key{}, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return wire.Key{}, fmt.Errorf("key file %s: %w", path, err)
	case !st.Mode().IsRegular():
		return wire.Key{}, fmt.Errorf("key file %s: not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		return wire.Key{}, fmt.Errorf("key file %s: its mode %04o lets others than its owner read or write it (chmod 600 %s)", path, st.Mode().Perm(), path)
	case st.Size() > maxKeyFile:
		return wire.Key{}, fmt.Errorf("key file %s: %d bytes, more than a key (at most %d)", path, st.Size(), maxKeyFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return wire.Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return wire.Key{}, fmt.Errorf("key file %s: more than %d bytes, more than a key", path, maxKeyFile)
	}
	k, err := wire.ParseKey(b)
	if err != nil {
		return wire.Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// WriteKey writes a fresh random job key, as hex text, to a new file at
// path, readable by its owner alone (mode 0600): atomically (the file
// appears whole, or not at all), and never over an existing file.
func WriteKey(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("key file %s: %w (a new key would lock out the roles that have the old one; remove it first)", path, fs.ErrExist)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(wire.NewKey().Hex() + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// A hard link, unlike a rename, never replaces a file that
		// appeared meanwhile.
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	return nil
}

// KeyCommand is "key new FILE": it writes a fresh job key to FILE, for
// --key.
var KeyCommand = Command{
	Name:     "key",
	Synopsis: "new FILE",
	Summary:  "write a fresh random job key to FILE (mode 0600), for --key FILE on every role of a job",
	Run:      runKey,
}

// runKey implements KeyCommand.
func runKey(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) == 2 && args[0] == "new" && !strings.HasPrefix(args[1], "-") {
		if err := WriteKey(args[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote a new job key to %s: give it to every role of the job (--key %s), as you give out NATS credentials\n", args[1], args[1])
		return nil
	}
	fs := flag.NewFlagSet("key", flag.ContinueOnError)
	if err := Parse(fs, args, stdout, "key new FILE"); err != nil && len(args) > 0 && strings.HasPrefix(args[0], "-") {
		return err
	}
	return Usagef("want: key new FILE")
}
