package wire

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"

	"github.com/nats-io/nats.go"
)

// HeaderMAC carries the MAC of a message under its job's key (DESIGN "Hostile traffic"):
// HMAC-SHA256 over its subject, its reply subject, its chunk headers and
// its payload, in unpadded standard base64. Each chunk of a chunked
// message carries its own, so that a chunk is checked before it is
// buffered. A message of a job without a key has none.
const HeaderMAC = "Strads-Mac"

// KeySize is the least number of bytes of a job key, and the size of the
// keys that NewKey makes.
const KeySize = 32

// macRoom is what the MAC header takes of a message's max_payload.
const macRoom = 96

// The errors of a message that a Conn with a key drops (see Conn.OnDrop).
var (
	// ErrUnauthenticated: a message without a MAC, from a node without
	// the job's key (or none at all).
	ErrUnauthenticated = errors.New("message without a MAC")
	// ErrForged: a message whose MAC does not verify under the job's key:
	// forged, altered, or from a node with another key.
	ErrForged = errors.New("message whose MAC does not verify")
)

// Key is a job's shared secret, which authenticates every message of the
// job (DESIGN "Hostile traffic"). Its zero value is no key. It never prints its bytes.
type Key struct{ b []byte }

// NewKey returns a fresh random key of KeySize bytes.
func NewKey() Key {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return Key{b}
}

// ParseKey reads a key from text: the hex or base64 text of at least
// KeySize bytes (surrounding white space ignored), or at least KeySize raw
// bytes.
func ParseKey(text []byte) (Key, error) {
	t := bytes.TrimSpace(text)
	if b, err := hex.DecodeString(string(t)); err == nil && len(t) > 0 {
		if len(b) < KeySize {
			return Key{}, fmt.Errorf("key of %d bytes (hex): want at least %d", len(b), KeySize)
		}
		return Key{b}, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(string(t)); err == nil && len(t) > 0 {
			if len(b) < KeySize {
				return Key{}, fmt.Errorf("key of %d bytes (base64): want at least %d", len(b), KeySize)
			}
			return Key{b}, nil
		}
	}
	if len(text) < KeySize {
		return Key{}, fmt.Errorf("key of %d bytes: want at least %d random bytes, or their hex or base64 text", len(text), KeySize)
	}
	return Key{bytes.Clone(text)}, nil
}

// Hex returns the key as hex text, as a key file holds it.
func (k Key) Hex() string { return hex.EncodeToString(k.b) }

// IsZero reports whether k is no key.
func (k Key) IsZero() bool { return len(k.b) == 0 }

// String hides the key's bytes.
func (k Key) String() string {
	if k.IsZero() {
		return "no key"
	}
	return "a job key"
}

// GoString hides the key's bytes.
func (k Key) GoString() string { return k.String() }

// Sum returns the HMAC-SHA256 under k of the given parts, each prefixed
// by its length so that no two lists of parts run together.
func (k Key) Sum(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, k.b)
	for _, p := range parts {
		writeField(m, p)
	}
	return m.Sum(nil)
}

// writeField writes p to h, prefixed by its length.
func writeField(h hash.Hash, p []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(p)))
	h.Write(n[:])
	h.Write(p)
}

// mac returns the MAC of a message (or chunk) with these subject, reply
// subject, chunk headers and payload.
func (k Key) mac(subject, reply string, h nats.Header, data []byte) []byte {
	m := hmac.New(sha256.New, k.b)
	writeField(m, []byte(subject))
	writeField(m, []byte(reply))
	for _, name := range []string{HeaderChunkID, HeaderChunk, HeaderChunkSize} {
		writeField(m, []byte(h.Get(name)))
	}
	writeField(m, data)
	return m.Sum(nil)
}

// seal sets the MAC header of msg.
func (k Key) seal(msg *nats.Msg) {
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	msg.Header[HeaderMAC] = []string{base64.RawStdEncoding.EncodeToString(k.mac(msg.Subject, msg.Reply, msg.Header, msg.Data))}
}

// verify checks the MAC of msg, as received: nil if it verifies, an
// error matching ErrUnauthenticated if it has none, ErrForged if it does
// not verify.
func (k Key) verify(msg *nats.Msg) error {
	v := msg.Header.Get(HeaderMAC)
	if v == "" {
		return fmt.Errorf("wire: message on %s: %w", msg.Subject, ErrUnauthenticated)
	}
	got, err := base64.RawStdEncoding.DecodeString(v)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("wire: message on %s: %w (a malformed MAC of %d characters)", msg.Subject, ErrForged, len(v))
	}
	if !hmac.Equal(got, k.mac(msg.Subject, msg.Reply, msg.Header, msg.Data)) {
		return fmt.Errorf("wire: message on %s: %w", msg.Subject, ErrForged)
	}
	return nil
}

// HasMAC reports whether msg carries a MAC, verified or not: a keyless
// coordinator tells a node with a key by it.
func HasMAC(msg *nats.Msg) bool { return msg.Header.Get(HeaderMAC) != "" }

// SetKey makes c authenticate every message it sends and receives with
// key (DESIGN "Hostile traffic"): what it sends carries a MAC, and what it receives
// without a MAC that verifies is dropped, reported to the function of
// OnDrop, before it is decoded or buffered. Call it before c is used. The
// zero key, the default, sends no MAC and checks none.
func (c *Conn) SetKey(key Key) error {
	if !key.IsZero() && !c.nc.HeadersSupported() {
		return errors.New("wire: a job key needs a NATS server that supports headers")
	}
	c.key = key
	return nil
}

// Key returns c's job key (the zero Key if none).
func (c *Conn) Key() Key { return c.key }

// Keyed reports whether c has a job key.
func (c *Conn) Keyed() bool { return !c.key.IsZero() }

// OnDrop sets the function that c calls with each message it drops
// because its MAC does not verify (the error matches ErrUnauthenticated or
// ErrForged), from the goroutine that received it: it must not block. Call
// it before c is used.
func (c *Conn) OnDrop(fn func(msg *nats.Msg, err error)) { c.dropFn = fn }

// Verify checks the MAC of msg, a message received on a subscription of
// c's connection that is not one of c's own (a Mailbox, an Inbox, a
// Request or SubscribeFunc check theirs): nil if c has no key or the MAC
// verifies, an error matching ErrUnauthenticated or ErrForged otherwise.
func (c *Conn) Verify(msg *nats.Msg) error {
	if c.key.IsZero() {
		return nil
	}
	return c.key.verify(msg)
}

// admit checks msg's MAC, and reports a message that fails to OnDrop's
// function: it returns the error, nil if msg is to be taken.
func (c *Conn) admit(msg *nats.Msg) error {
	err := c.Verify(msg)
	if err != nil && c.dropFn != nil {
		c.dropFn(msg, err)
	}
	return err
}

// SubscribeFunc subscribes to the full subject and calls fn, from nats.go's
// goroutine, with each message whose MAC verifies (every message, without
// a key). Messages are not put together from chunks.
func (c *Conn) SubscribeFunc(subject string, fn func(msg *nats.Msg)) (*nats.Subscription, error) {
	return c.nc.Subscribe(subject, func(msg *nats.Msg) {
		if c.admit(msg) == nil {
			fn(msg)
		}
	})
}

// Send publishes data on the full subject with reply subject reply (none
// if empty), with its MAC if c has a key, in chunks if it exceeds the
// server's max_payload.
func (c *Conn) Send(subject, reply string, data []byte) error { return c.send(subject, reply, data) }
