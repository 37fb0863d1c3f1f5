package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errSizes is wrapped in the error of a message that announces more than
// it holds.
var errSizes = errors.New("announces more than it holds")

// checkSizes walks the msgpack values in data and returns an error unless
// every length they announce fits in the bytes that follow: n bytes for a
// string, bin or ext, at least one byte for each element of an array and
// two for each entry of a map. msgpack (v5.4.1) allocates a typed slice of
// the length that an array announces in full before it reads the elements,
// so that 9 bytes announcing 2³¹ structs would cost hundreds of gigabytes;
// after this check a message costs at most its size times the size of the
// largest element it decodes to (DESIGN "Roles, subjects and messages"). It reads the headers only,
// skipping the contents of strings and bins.
func checkSizes(data []byte) error {
	pending := uint64(1) // values still to read
	i := 0
	left := func() uint64 { return uint64(len(data) - i) }
	for pending > 0 {
		if pending > left() {
			return fmt.Errorf("%w: %d more values at byte %d of %d", errSizes, pending, i, len(data))
		}
		c := data[i]
		i++
		pending--
		var width int // the bytes of the length, or of the value, that follow
		var kind byte // what the length counts: 'b' bytes, 'x' ext bytes, 'a' values, 'm' pairs; 0: width is the value
		var n uint64  // a fixed length
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3: // fixint, nil, bool
			continue
		case c <= 0x8f:
			kind, n = 'm', uint64(c&0x0f)
		case c <= 0x9f:
			kind, n = 'a', uint64(c&0x0f)
		case c <= 0xbf:
			kind, n = 'b', uint64(c&0x1f)
		case c == 0xc4 || c == 0xd9:
			kind, width = 'b', 1
		case c == 0xc5 || c == 0xda:
			kind, width = 'b', 2
		case c == 0xc6 || c == 0xdb:
			kind, width = 'b', 4
		case c >= 0xc7 && c <= 0xc9:
			kind, width = 'x', 1<<(c-0xc7)
		case c == 0xcc || c == 0xd0:
			width = 1
		case c == 0xcd || c == 0xd1:
			width = 2
		case c == 0xca || c == 0xce || c == 0xd2:
			width = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			width = 8
		case c >= 0xd4 && c <= 0xd8: // fixext: a type and 1, 2, 4, 8 or 16 bytes
			width = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			kind, width = 'a', 2
		case c == 0xdd:
			kind, width = 'a', 4
		case c == 0xde:
			kind, width = 'm', 2
		case c == 0xdf:
			kind, width = 'm', 4
		default: // 0xc1, never used
			return fmt.Errorf("%w: the unused code 0x%x at byte %d", errSizes, c, i-1)
		}
		if uint64(width) > left() {
			return fmt.Errorf("%w: %d bytes of code 0x%x at byte %d of %d", errSizes, width, c, i, len(data))
		}
		if kind == 0 {
			i += width
			continue
		}
		switch width {
		case 1:
			n = uint64(data[i])
		case 2:
			n = uint64(binary.BigEndian.Uint16(data[i:]))
		case 4:
			n = uint64(binary.BigEndian.Uint32(data[i:]))
		}
		i += width
		switch kind {
		case 'b', 'x':
			if kind == 'x' {
				n++ // the ext's type
			}
			if n > left() {
				return fmt.Errorf("%w: %d bytes at byte %d of %d", errSizes, n, i, len(data))
			}
			i += int(n)
		case 'a':
			pending += n
		case 'm':
			pending += 2 * n
		}
	}
	return nil
}
