package natsserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		{"host", Options{Host: "127.0.0.1"}, true, MaxPayload},
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
			if srv.Loopback() != tt.tcp {
				t.Errorf("Loopback() = %v on %v, want %v", srv.Loopback(), addr, tt.tcp)
			}
			if !tt.tcp {
				return
			}
			tc, err := nats.Connect(srv.ClientURL(), nats.Timeout(5*time.Second))
			if err != nil {
				t.Fatalf("TCP connection to %s: %v", srv.ClientURL(), err)
			}
			tc.Close()
		})
	}
}

// writeConfig writes a nats-server configuration file and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile starts servers from nats-server configuration files, with
// and without the fields of Options overriding them, and checks what the
// file says (users, max_payload, the listen address) and what the fields
// override.
func TestConfigFile(t *testing.T) {
	const auth = "authorization { user: strads, password: s3cret }\n"
	tests := []struct {
		name       string
		config     string
		opts       Options
		auth       bool // clients must give strads/s3cret
		maxPayload int64
		loopback   bool
	}{
		{"auth, address from the file", auth + "listen: 127.0.0.1:-1\n", Options{ConfigAddr: true}, true, MaxPayload, true},
		{"auth, address from the options", auth + "listen: 0.0.0.0:1\n", Options{Host: "127.0.0.1"}, true, MaxPayload, true},
		{"no host in the file: loopback", "port: -1\n", Options{ConfigAddr: true}, false, MaxPayload, true},
		{"all interfaces from the file", "listen: 0.0.0.0:-1\n", Options{ConfigAddr: true}, false, MaxPayload, false},
		{"max_payload from the file", "port: -1\nmax_payload: 65536\n", Options{ConfigAddr: true}, false, 65536, true},
		{"max_payload from the options", "port: -1\nmax_payload: 65536\n", Options{ConfigAddr: true, MaxPayload: 1 << 20}, false, 1 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.ConfigFile = writeConfig(t, tt.config+fmt.Sprintf("log_file: %q\n", filepath.Join(t.TempDir(), "nats.log")))
			srv, err := Start(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			if srv.Loopback() != tt.loopback {
				t.Errorf("listening on %v, want loopback %v", srv.Addr(), tt.loopback)
			}
			// Whatever interface it listens on, loopback reaches it.
			url := fmt.Sprintf("nats://127.0.0.1:%d", srv.Addr().(*net.TCPAddr).Port)
			nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
			if tt.auth {
				if !errors.Is(err, nats.ErrAuthorization) {
					t.Errorf("a client without credentials: %v, want %v", err, nats.ErrAuthorization)
				}
				if nc != nil {
					nc.Close()
				}
				nc, err = nats.Connect(url, nats.UserInfo("strads", "s3cret"), nats.Timeout(5*time.Second))
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer nc.Close()
			if got := nc.MaxPayload(); got != tt.maxPayload {
				t.Errorf("max payload %d, want %d", got, tt.maxPayload)
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"syntax", "port: [\n", "nats.conf"},
		{"unknown field", "port: -1\nno_such_field: 1\n", "no_such_field"},
		{"bad tls", "port: -1\ntls { cert_file: /nonexistent.pem, key_file: /nonexistent.key }\n", "nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Start(Options{ConfigFile: writeConfig(t, tt.config), ConfigAddr: true})
			if err == nil {
				srv.Stop()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to name %q", err, tt.want)
			}
		})
	}
	if _, err := Start(Options{ConfigFile: filepath.Join(t.TempDir(), "missing.conf")}); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("missing file: %v", err)
	}
}

// TestStoreDir enables JetStream with a store directory and checks that
// what is stored survives a restart of the server on the same directory.
func TestStoreDir(t *testing.T) {
	dir := t.TempDir()
	put := func(first bool) {
		srv, err := Start(Options{Port: -1, StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		nc, err := srv.ConnectInProcess("test")
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err != nil {
			t.Fatal(err)
		}
		if first {
			kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: "t", Storage: nats.FileStorage})
			if err != nil {
				t.Fatalf("JetStream key-value: %v", err)
			}
			if _, err := kv.Put("k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			return
		}
		kv, err := js.KeyValue("t")
		if err != nil {
			t.Fatalf("bucket lost across a restart: %v", err)
		}
		e, err := kv.Get("k")
		if err != nil || string(e.Value()) != "v" {
			t.Fatalf("key after a restart: %v, %v", e, err)
		}
	}
	put(true)
	put(false)
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Errorf("store directory: %v", err)
	}
}

// TestFanIn publishes 80 MiB to a client that reads none of it, as a
// round's partials all go to the coordinator at once: a server of Start
// keeps the client (MaxPending), where nats-server's own 64 MiB, said in
// a config file, drops it as a slow consumer. (The write deadline is long
// so that only max_pending can drop it.)
func TestFanIn(t *testing.T) {
	tests := []struct {
		name, config string
		dropped      bool
	}{
		{"default", "", false},
		{"nats-server's max_pending", "max_pending: 67108864\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := tt.config + "write_deadline: \"1h\"\n" + fmt.Sprintf("log_file: %q\n", filepath.Join(t.TempDir(), "nats.log"))
			srv, err := Start(Options{Port: -1, ConfigFile: writeConfig(t, config)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			reader, err := srv.InProcessConn()
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			r := bufio.NewReader(reader)
			if _, err := r.ReadString('\n'); err != nil { // INFO
				t.Fatal(err)
			}
			if _, err := io.WriteString(reader, "CONNECT {\"verbose\":false}\r\nSUB fanin 1\r\nPING\r\n"); err != nil {
				t.Fatal(err)
			}
			for line := ""; line != "PONG\r\n"; {
				if line, err = r.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			nc, err := srv.ConnectInProcess("writer")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			data := make([]byte, 4<<20)
			for range 20 {
				if err := nc.Publish("fanin", data); err != nil {
					t.Fatal(err)
				}
			}
			// The server has queued every message for the reader.
			if err := nc.FlushTimeout(time.Minute); err != nil {
				t.Fatal(err)
			}
			if dropped := srv.NumSlowConsumers() > 0; dropped != tt.dropped {
				t.Errorf("reader dropped as a slow consumer: %v, want %v", dropped, tt.dropped)
			}
		})
	}
}
