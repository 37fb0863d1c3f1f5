package codec

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

type numbers struct {
	F Float64s `msgpack:"f"`
	I Int32s   `msgpack:"i"`
	X int      `msgpack:"x"`
}

func TestCodecRoundTrip(t *testing.T) {
	cases := []numbers{
		{},
		{F: Float64s{}, I: Int32s{}},
		{F: Float64s{1, -2.5, math.Inf(1), math.SmallestNonzeroFloat64, math.MaxFloat64}, I: Int32s{0, -1, math.MaxInt32, math.MinInt32}, X: 7},
	}
	for _, want := range cases {
		data, err := Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got numbers
		if err := Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %+v gave %+v", want, got)
		}
	}
}

func TestCodecReusesSlices(t *testing.T) {
	data, _ := Marshal(numbers{F: Float64s{1, 2}})
	buf := make(Float64s, 0, 8)
	got := numbers{F: buf}
	if err := Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if &got.F[0] != &buf[:1][0] {
		t.Error("decoding did not reuse the slice's backing array")
	}
}

func TestCodecRejectsTruncated(t *testing.T) {
	data, _ := msgpack.Marshal(map[string]any{"f": []byte{1, 2, 3}})
	var got numbers
	if err := Unmarshal(data, &got); err == nil || !strings.Contains(err.Error(), "multiple of 8") {
		t.Errorf("error %v, want a length error", err)
	}
}

func BenchmarkEncodeFloat64s(b *testing.B) {
	v := struct {
		F Float64s `msgpack:"f"`
	}{F: make(Float64s, 1<<14)}
	b.SetBytes(8 << 14)
	for b.Loop() {
		Marshal(v)
	}
}

func BenchmarkEncodePlainFloat64Slice(b *testing.B) {
	v := struct {
		F []float64 `msgpack:"f"`
	}{F: make([]float64, 1<<14)}
	b.SetBytes(8 << 14)
	for b.Loop() {
		Marshal(v)
	}
}
