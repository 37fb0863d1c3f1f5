package wire

import (
	"context"
	"fmt"
	"testing"

	"github.com/strads-go/strads/natsserver"
)

// BenchmarkPublishReceive publishes a message on one in-process connection
// and waits for it on another, one message at a time: bytes through NATS,
// with one copy to encode and one to decode.
func BenchmarkPublishReceive(b *testing.B) {
	for _, bc := range []struct {
		size       int
		maxPayload int32
	}{
		{64, natsserver.MaxPayload},
		{1 << 20, natsserver.MaxPayload},
		{16 << 20, 1 << 20},
		{16 << 20, natsserver.MaxPayload},
	} {
		chunks := "unchunked"
		if bc.size > int(bc.maxPayload) {
			n := (bc.size + int(bc.maxPayload) - chunkHeaderRoom - 1) / (int(bc.maxPayload) - chunkHeaderRoom)
			chunks = fmt.Sprintf("%dchunks", n)
		}
		b.Run(fmt.Sprintf("%s/max%s/%s", bytesName(bc.size), bytesName(int(bc.maxPayload)), chunks), func(b *testing.B) {
			srv, err := natsserver.Start(natsserver.Options{Port: -1, MaxPayload: bc.maxPayload})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Stop) // after the connections close
			pub, sub := connect(b, srv, false), connect(b, srv, false)
			in, err := Subscribe[[]byte](sub, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer in.Close()
			if err := sub.nc.Flush(); err != nil {
				b.Fatal(err)
			}
			data := make([]byte, bc.size)
			ctx := context.Background()
			b.SetBytes(int64(bc.size))
			for b.Loop() {
				if err := Publish(pub, "bench", data); err != nil {
					b.Fatal(err)
				}
				got, _, err := in.Next(ctx)
				if err != nil || len(got) != bc.size {
					b.Fatalf("got %d bytes, %v", len(got), err)
				}
			}
		})
	}
}

func bytesName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkRequest measures a small request/reply round trip in-process
// (the join and ready requests).
func BenchmarkRequest(b *testing.B) {
	srv, err := natsserver.Start(natsserver.Options{Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop) // after the connections close
	cli, rsp := connect(b, srv, false), connect(b, srv, false)
	in, err := Subscribe[[]byte](rsp, "echo")
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			v, msg, err := in.Next(ctx)
			if err != nil {
				return
			}
			Reply(rsp, msg, v)
		}
	}()
	if err := rsp.nc.Flush(); err != nil {
		b.Fatal(err)
	}
	req := make([]byte, 64)
	for b.Loop() {
		if _, err := Request[[]byte, []byte](ctx, cli, "echo", req); err != nil {
			b.Fatal(err)
		}
	}
}
