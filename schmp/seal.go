package schmp

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/strads-go/strads/codec"
)

// Seal encodes v as a Snapshotter's bytes in a sealed envelope: kind (the
// role's, e.g. "lda/worker"), the encoding's version and v in msgpack,
// followed by the CRC-32C of all of it, so that Unseal tells a snapshot of
// another role or version, a truncated or a corrupted one from a good one.
func Seal(kind string, version int, v any) ([]byte, error) {
	body, err := codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s snapshot: %w", kind, err)
	}
	b, err := codec.Marshal(envelope{Kind: kind, Version: version, Body: body})
	if err != nil {
		return nil, fmt.Errorf("%s snapshot: %w", kind, err)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// Unseal decodes b, sealed by Seal with kind and version, into v. Bytes
// of another kind or version, or whose checksum fails, are an error.
func Unseal(b []byte, kind string, version int, v any) error {
	if len(b) < 4 {
		return fmt.Errorf("%s snapshot: %d bytes, too short", kind, len(b))
	}
	data, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(data, castagnoli) != sum {
		return fmt.Errorf("%s snapshot: checksum mismatch (truncated or corrupted)", kind)
	}
	var e envelope
	if err := codec.Unmarshal(data, &e); err != nil {
		return fmt.Errorf("%s snapshot: %w", kind, err)
	}
	switch {
	case e.Kind != kind:
		return fmt.Errorf("%s snapshot: the bytes are a snapshot of %q", kind, e.Kind)
	case e.Version != version:
		return fmt.Errorf("%s snapshot: version %d, want %d", kind, e.Version, version)
	}
	if err := codec.Unmarshal(e.Body, v); err != nil {
		return fmt.Errorf("%s snapshot: %w", kind, err)
	}
	return nil
}

// envelope is a sealed snapshot's outer layer.
type envelope struct {
	Kind    string `msgpack:"kind"`
	Version int    `msgpack:"version"`
	Body    []byte `msgpack:"body"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
