// Package codec is the msgpack encoding of the messages of a job and of the
// snapshots of its nodes: Marshal and Unmarshal, and the numeric slices
// Float64s and Int32s, which travel as one bin of little-endian words
// instead of one msgpack number per element. Unmarshal costs memory in
// proportion to the size of the data it decodes, whatever lengths they
// announce (DESIGN "Roles, subjects and messages").
//
// It is a leaf: it imports msgpack and the standard library only, so that
// an app (package schmp and the apps) can describe its messages without
// importing the transport, package wire, which sends them over NATS.
package codec
