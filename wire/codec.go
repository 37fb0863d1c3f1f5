package wire

import (
	"encoding/binary"
	"fmt"
	"math"
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
func (f Float64s) EncodeMsgpack(enc *msgpack.Encoder) error {
	if f == nil {
		return enc.EncodeNil()
	}
	if littleEndian {
		return enc.EncodeBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 8*len(f)))
	}
	b := make([]byte, 0, 8*len(f))
	for _, v := range f {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return enc.EncodeBytes(b)
}

// DecodeMsgpack implements msgpack.CustomDecoder. It reuses f's backing
// array when it is large enough.
func (f *Float64s) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n < 0 {
		*f = nil
		return nil
	}
	if n%8 != 0 {
		return fmt.Errorf("wire: float64 array of %d bytes is not a multiple of 8", n)
	}
	v := *f
	if v != nil && cap(v) >= n/8 {
		v = v[:n/8]
	} else {
		v = make([]float64, n/8)
	}
	*f = v
	if littleEndian {
		return dec.ReadFull(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), n))
	}
	b := make([]byte, n)
	if err := dec.ReadFull(b); err != nil {
		return err
	}
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s Int32s) EncodeMsgpack(enc *msgpack.Encoder) error {
	if s == nil {
		return enc.EncodeNil()
	}
	if littleEndian {
		return enc.EncodeBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s)))
	}
	b := make([]byte, 0, 4*len(s))
	for _, v := range s {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return enc.EncodeBytes(b)
}

// DecodeMsgpack implements msgpack.CustomDecoder. It reuses s's backing
// array when it is large enough.
func (s *Int32s) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return err
	}
	if n < 0 {
		*s = nil
		return nil
	}
	if n%4 != 0 {
		return fmt.Errorf("wire: int32 array of %d bytes is not a multiple of 4", n)
	}
	v := *s
	if v != nil && cap(v) >= n/4 {
		v = v[:n/4]
	} else {
		v = make([]int32, n/4)
	}
	*s = v
	if littleEndian {
		return dec.ReadFull(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), n))
	}
	b := make([]byte, n)
	if err := dec.ReadFull(b); err != nil {
		return err
	}
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// Marshal encodes v as msgpack.
func Marshal(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %T: %w", v, err)
	}
	return b, nil
}

// Unmarshal decodes msgpack data into v.
func Unmarshal(data []byte, v any) error {
	if err := msgpack.Unmarshal(data, v); err != nil {
		return fmt.Errorf("wire: decode %T: %w", v, err)
	}
	return nil
}
