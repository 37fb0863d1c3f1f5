// Command netem is a TCP proxy that emulates a network link: each
// direction of every connection is delayed by half a round trip and
// limited to a rate, in order, as a wire of that latency and bandwidth
// would carry it (the kernel here has no netem qdisc). bench/netem/run.sh
// puts it between strads's roles and their NATS server.
//
//	netem -listen 10.77.1.1:14222 -upstream 127.0.0.1:4222 -rtt 1ms -rate 1e9
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:14222", "`address` to accept connections on")
	upstream := flag.String("upstream", "127.0.0.1:4222", "`address` each connection is forwarded to")
	rtt := flag.Duration("rtt", time.Millisecond, "round-trip time added: each direction is delayed by half")
	rate := flag.Float64("rate", 1e9, "bandwidth of each direction of each connection, in bits/s (0: unlimited)")
	flag.Parse()
	if *rtt < 0 || *rate < 0 {
		fmt.Fprintln(os.Stderr, "netem: -rtt and -rate must not be negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netem:", err)
		os.Exit(1)
	}
	fmt.Printf("netem: %s -> %s, rtt %s, %g bit/s\n", l.Addr(), *upstream, *rtt, *rate)
	link := Link{Delay: *rtt / 2, Rate: *rate}
	if err := serve(ctx, l, *upstream, link); ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "netem:", err)
		os.Exit(1)
	}
}

// serve accepts connections on l until ctx ends (or the listener fails,
// its error), and forwards each to upstream through link, both ways.
func serve(ctx context.Context, l net.Listener, upstream string, link Link) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			var d net.Dialer
			u, err := d.DialContext(ctx, "tcp", upstream)
			if err != nil {
				slog.Warn("netem: dial upstream", "err", err)
				c.Close()
				return
			}
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); link.Carry(u, c) }()
			go func() { defer wg.Done(); link.Carry(c, u) }()
			wg.Wait()
			c.Close()
			u.Close()
		}()
	}
}

// Link is one direction of an emulated wire: a chunk of n bytes read at
// time t leaves the wire at max(t, when the wire is free) + n·8/Rate +
// Delay, and the wire is busy until max(t, free) + n·8/Rate.
type Link struct {
	Delay time.Duration
	Rate  float64 // bits/s; 0: unlimited
}

// chunk is what one read took from the source, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// Carry copies src to dst through the link until src ends (then it closes
// dst's write side) or either fails.
func (l Link) Carry(dst, src net.Conn) {
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var free time.Time
	for c := range queue {
		out := l.Due(&free, c.at, len(c.data))
		if d := time.Until(out); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				slog.Debug("netem: write", "err", err)
			}
			src.Close()
			for range queue {
			}
			return
		}
	}
	if tc, ok := dst.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
	}
}

// Due returns when n bytes read at time at leave the link, and moves free,
// the time the wire is free again, past their transmission.
func (l Link) Due(free *time.Time, at time.Time, n int) time.Time {
	start := at
	if free.After(start) {
		start = *free
	}
	if l.Rate > 0 {
		start = start.Add(time.Duration(float64(n) * 8 / l.Rate * float64(time.Second)))
	}
	*free = start
	return start.Add(l.Delay)
}
