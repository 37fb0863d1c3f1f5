package codec

import "testing"

// FuzzUnmarshalWords decodes any bytes into a message with raw-word slices
// (Float64s, Int32s), empty and reused: it must not panic, and what it
// takes must encode to a message that decodes to the same.
func FuzzUnmarshalWords(f *testing.F) {
	for _, v := range []numbers{{}, {F: Float64s{1, -2.5}, I: Int32s{7}, X: 3}, {F: Float64s{}, I: Int32s{}}} {
		data, _ := Marshal(v)
		f.Add(data)
	}
	f.Add([]byte{0x81, 0xa1, 'f', 0xc6, 0x80, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, into := range []numbers{{}, {F: make(Float64s, 4), I: make(Int32s, 4)}} {
			if err := Unmarshal(data, &into); err != nil {
				continue
			}
			again, err := Marshal(into)
			if err != nil {
				t.Fatal(err)
			}
			var back numbers
			if err := Unmarshal(again, &back); err != nil || len(back.F) != len(into.F) || len(back.I) != len(into.I) || back.X != into.X {
				t.Fatalf("%+v encodes to %x, which decodes to %+v, %v", into, again, back, err)
			}
		}
	})
}
