package coordinator

import (
	"testing"
	"time"
)

// TestResends drives the schedule of the sends after a reconnect in
// virtual time: at once, then 100 ms later, doubling up to 2 s, until the
// timeout after the last reconnect; a reconnect starts it again, and a
// rollback stops it.
func TestResends(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	var r resends
	if r.due(ms(0)) {
		t.Fatal("a send due before any reconnect")
	}
	r.reconnected(ms(0), 10*time.Second)
	var sent []int
	for d := 0; d <= 12000; d += 10 {
		if r.due(ms(d)) {
			sent = append(sent, d)
		}
	}
	want := []int{0, 100, 300, 700, 1500, 3100, 5100, 7100, 9100}
	if len(sent) != len(want) {
		t.Fatalf("sent at %v ms, want %v", sent, want)
	}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("sent at %v ms, want %v", sent, want)
		}
	}
	if _, on := r.next(); on {
		t.Error("still on after the timeout")
	}
	r.reconnected(ms(20000), 10*time.Second)
	if at, on := r.next(); !on || !at.Equal(ms(20000)) || !r.due(ms(20000)) {
		t.Errorf("a reconnect: next %v %v, want at once", at, on)
	}
	r.stop()
	if r.due(ms(21000)) {
		t.Error("a send due after stop")
	}
}
