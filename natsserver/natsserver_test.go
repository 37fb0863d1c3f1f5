package natsserver

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestStart(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		tcp        bool
		maxPayload int64
	}{
		{"free port", Options{}, true, MaxPayload},
		{"in process only", Options{Port: -1}, false, MaxPayload},
		{"small payload", Options{MaxPayload: 4 << 10}, true, 4 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Start(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			nc, err := srv.ConnectInProcess("test")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if got := nc.MaxPayload(); got != tt.maxPayload {
				t.Errorf("max payload %d, want %d", got, tt.maxPayload)
			}
			addr := srv.Addr()
			if tt.tcp != (addr != nil) {
				t.Fatalf("listening on %v, want TCP %v", addr, tt.tcp)
			}
			if !tt.tcp {
				return
			}
			tc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatalf("TCP connection to %s: %v", srv.ClientURL(), err)
			}
			tc.Close()
		})
	}
}
