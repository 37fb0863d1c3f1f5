package wire

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/strads-go/strads/natsserver"
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

func TestPublishRequestSubscribe(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := srv.ConnectInProcess("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := NewConn(nc, "j1")
	if err != nil {
		t.Fatal(err)
	}
	in, err := Subscribe[numbers](c, "echo")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		v, msg, err := in.Next(ctx)
		if err == nil {
			v.X++
			Reply(c, msg, v)
		}
	}()
	rep, err := Request[numbers, numbers](ctx, c, "echo", numbers{F: Float64s{3}, X: 1})
	if err != nil || rep.X != 2 || rep.F[0] != 3 {
		t.Fatalf("reply %+v, %v", rep, err)
	}

	// Nobody listens: an error at once, not a hang.
	if _, err := Request[numbers, numbers](ctx, c, "nobody", numbers{}); err == nil {
		t.Error("request to a subject without responders succeeded")
	}
	// Too big for the server: sent in chunks, never a silent drop.
	big := numbers{F: make(Float64s, natsserver.MaxPayload/8+1)}
	if err := Publish(c, "echo", big); err != nil {
		t.Fatalf("oversized publish: %v", err)
	}
	if got, _, err := in.Next(ctx); err != nil || len(got.F) != len(big.F) {
		t.Errorf("oversized message: %d values, %v; want %d", len(got.F), err, len(big.F))
	}
	// Next honours its context.
	short, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	if _, _, err := in.Next(short); err == nil {
		t.Error("Next returned without a message")
	}
}

func TestCheckJob(t *testing.T) {
	for job, ok := range map[string]bool{"lasso": true, "a-b_9": true, "": false, "a.b": false, "a b": false, "a*": false, ">": false} {
		if err := CheckJob(job); (err == nil) != ok {
			t.Errorf("CheckJob(%q) = %v", job, err)
		}
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
