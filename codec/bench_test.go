package codec

import "testing"

// report mirrors the largest message of the Lasso app, a worker's report:
// a few scalars and one value per feature.
type report struct {
	Rows     int      `msgpack:"n"`
	SqResid  float64  `msgpack:"rr"`
	SumResid float64  `msgpack:"r"`
	XtR      Float64s `msgpack:"xr"`
	L1       float64  `msgpack:"l1"`
	NNZ      int      `msgpack:"nz"`
}

func newReport(features int) report {
	r := report{Rows: 1000, SqResid: 1.5, SumResid: -0.25, XtR: make(Float64s, features), L1: 3, NNZ: 17}
	for i := range r.XtR {
		r.XtR[i] = float64(i) * 1e-3
	}
	return r
}

// BenchmarkReportCodec encodes and decodes a report of 1M features (8 MB).
func BenchmarkReportCodec(b *testing.B) {
	const features = 1 << 20
	r := newReport(features)
	data, err := Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var got report
			if err := Unmarshal(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-reuse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var got report
		for b.Loop() {
			if err := Unmarshal(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
}
