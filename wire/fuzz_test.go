package wire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
)

// FuzzAssembler feeds an assembler chunks of any headers and sizes, read
// from the fuzzer's bytes, and checks its bounds after each: it holds no
// more than it may, allocates at most twice what arrived, and hands out
// only messages of the size they announced. The second input, split into
// chunks as a sender does, must come out whole.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 0, 2, 1, 0, 20, 10, 0, 1, 2, 0, 0, 10}, []byte("hello, chunked world"), uint8(7))
	f.Add([]byte{1, 0, 1, 1, 255, 255, 1}, []byte("x"), uint8(1))
	f.Add([]byte{2, 5, 3, 0, 0, 0, 64}, bytes.Repeat([]byte("ab"), 100), uint8(64))
	f.Fuzz(func(t *testing.T, ops, data []byte, size uint8) {
		limits := chunkLimits{maxMessage: 4096, maxPayload: 64, maxPartial: 4, stale: defaultChunkLimits.stale}
		a := newAssembler(limits, pendingEmpty)
		// Each op: id, index, count, has a size, size (2 bytes), length.
		for len(ops) >= 7 {
			op := ops[:7]
			ops = ops[7:]
			h := nats.Header{HeaderChunkID: {strconv.Itoa(int(op[0] % 8))}, HeaderChunk: {strconv.Itoa(int(op[1])) + "/" + strconv.Itoa(int(op[2]))}}
			if op[3]%2 == 1 {
				h[HeaderChunkSize] = []string{strconv.Itoa(int(binary.BigEndian.Uint16(op[4:6])))}
			}
			n := min(int(op[6]), len(ops))
			chunk := ops[:n]
			ops = ops[n:]
			whole := a.add(&nats.Msg{Subject: "s", Header: h, Data: chunk})
			for a.takeErr() != nil {
			}
			var held int64
			for _, p := range a.parts {
				held += int64(len(p.data))
				if int64(len(p.data)) > p.size || len(p.data) > 0 && cap(p.data) > 2*len(p.data) || cap(p.data) > int(limits.maxPayload)*2*p.next+1 {
					t.Fatalf("a partial message of %d bytes announced holds %d in %d", p.size, len(p.data), cap(p.data))
				}
			}
			if held != a.bytes || a.bytes > limits.maxMessage || len(a.parts) > limits.maxPartial {
				t.Fatalf("%d partial messages hold %d bytes, counted %d", len(a.parts), held, a.bytes)
			}
			if whole != nil && whole.Header != nil && len(whole.Data) > int(limits.maxMessage) {
				t.Fatalf("a whole message of %d bytes", len(whole.Data))
			}
		}

		if len(data) == 0 || size == 0 || len(data)/int(size) > 1024 {
			return
		}
		b := newAssembler(limits, pendingEmpty)
		var got *nats.Msg
		for _, msg := range chunkMsgs("s", "r", data, int(size)) {
			if got != nil {
				t.Fatal("a whole message before its last chunk")
			}
			got = b.add(msg)
			if err := b.takeErr(); err != nil && len(data) <= int(limits.maxMessage) && int(size) <= int(limits.maxPayload) {
				t.Fatalf("chunks of %d bytes of a message of %d: %v", size, len(data), err)
			}
		}
		if len(data) <= int(limits.maxMessage) && int(size) <= int(limits.maxPayload) && (got == nil || !bytes.Equal(got.Data, data) || got.Reply != "r") {
			t.Fatalf("a message of %d bytes in chunks of %d came out as %v", len(data), size, got)
		}
	})
}
