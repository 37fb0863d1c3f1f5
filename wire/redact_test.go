package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@host:4222", "nats://alice:xxxxx@host:4222"},
		{"nats://TOKEN@host", "nats://xxxxx@host"},
		{"nats://a:p1@h1:4222,nats://b:p2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{`parse "tls://alice:s3cret@h:x": invalid port`, `parse "tls://alice:xxxxx@h:x": invalid port`},
		{"no url here", "no url here"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestConnectRedacts checks that Connect's error shows neither the password
// of its URL nor its unescaped form, even where nats.go quotes the URL.
func TestConnectRedacts(t *testing.T) {
	for _, url := range []string{
		"nats://alice:s3cr%3Ft@127.0.0.1:x", // nats.go quotes the URL that does not parse
		"nats://alice:s3cr%3Ft@127.0.0.1:1", // nothing listens
	} {
		_, err := Connect(url, "test", time.Second)
		if err == nil {
			t.Fatalf("Connect(%q) succeeded", url)
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr") {
			t.Errorf("Connect(%q): error %q shows the password", url, msg)
		}
		if errors.Unwrap(err) == nil {
			t.Errorf("Connect(%q): error %v has no cause", url, err)
		}
	}
	if got := Scrub("password s3cr?t, escaped s3cr%3Ft", Secrets("nats://u:s3cr%3Ft@h")); strings.Contains(got, "s3cr") {
		t.Errorf("Scrub left a secret: %q", got)
	}
	if got, want := Scrub("a short password a in nats://u:a@h", Secrets("nats://u:a@h")), "a short password a in nats://u:xxxxx@h"; got != want {
		t.Errorf("Scrub of a short secret: %q, want %q", got, want)
	}
}
