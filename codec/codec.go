package codec

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// Float64s is a []float64 that travels as one msgpack bin of little-endian
// IEEE-754 words instead of one msgpack float per element, which is about two
// orders of magnitude cheaper to encode and decode.
type Float64s []float64

// Int32s is a []int32 that travels as one msgpack bin of little-endian words.
type Int32s []int32

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f Float64s) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeWords(enc, f) }

// DecodeMsgpack implements msgpack.CustomDecoder. It reuses f's backing
// array when it is large enough.
func (f *Float64s) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeWords(dec, (*[]float64)(f))
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s Int32s) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeWords(enc, s) }

// DecodeMsgpack implements msgpack.CustomDecoder. It reuses s's backing
// array when it is large enough.
func (s *Int32s) DecodeMsgpack(dec *msgpack.Decoder) error {
	return decodeWords(dec, (*[]int32)(s))
}

// encodeWords writes v as one bin of little-endian words (nil as nil).
func encodeWords[T float64 | int32](enc *msgpack.Encoder, v []T) error {
	if v == nil {
		return enc.EncodeNil()
	}
	if littleEndian {
		return enc.EncodeBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0]))))
	}
	b, err := binary.Append(nil, binary.LittleEndian, v)
	if err != nil {
		return err
	}
	return enc.EncodeBytes(b)
}

// decodeWords reads a bin written by encodeWords into *p, reusing its
// backing array when it is large enough. A bin larger than its backing
// array is read in steps of at most wordStep bytes, the slice growing as
// the bytes arrive: a bin header that announces more than the message holds
// costs no more memory than the message (DESIGN "Roles, subjects and messages").
func decodeWords[T float64 | int32](dec *msgpack.Decoder, p *[]T) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n < 0 {
		*p = nil
		return nil
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n%size != 0 {
		return fmt.Errorf("codec: %T array of %d bytes is not a multiple of %d", zero, n, size)
	}
	v := *p
	if v != nil && cap(v) >= n/size {
		v = v[:n/size]
		*p = v
		return readWords(dec, v)
	}
	v = make([]T, 0, min(n, wordStep)/size)
	for len(v) < n/size {
		k := min(n/size-len(v), wordStep/size)
		v = slices.Grow(v, k)[:len(v)+k]
		if err := readWords(dec, v[len(v)-k:]); err != nil {
			return err
		}
	}
	*p = v
	return nil
}

// wordStep is the most bytes of a bin that decodeWords allocates ahead of
// their arrival.
const wordStep = 1 << 20

// readWords reads len(v) little-endian words into v.
func readWords[T float64 | int32](dec *msgpack.Decoder, v []T) error {
	n := len(v) * int(unsafe.Sizeof(v[0]))
	if littleEndian {
		return dec.ReadFull(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), n))
	}
	b := make([]byte, n)
	if err := dec.ReadFull(b); err != nil {
		return err
	}
	_, err := binary.Decode(b, binary.LittleEndian, v)
	return err
}

// Marshal encodes v as msgpack.
func Marshal(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("codec: encode %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes msgpack data into v. It first checks that every
// length the data announce fits in them (checkSizes), so that a message
// costs memory in proportion to its size, whatever it announces.
func Unmarshal(data []byte, v any) error {
	if err := checkSizes(data); err != nil {
		return fmt.Errorf("codec: decode %T: %w", v, err)
	}
	if err := msgpack.Unmarshal(data, v); err != nil {
		return fmt.Errorf("codec: decode %T: %w", v, err)
	}
	return nil
}
