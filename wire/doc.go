// Package wire moves typed values between the nodes of a job: typed
// publish, request and subscribe over NATS, encoding messages with package
// codec (msgpack), and subjects under one job prefix. It is a client only:
// the embedded server is package natsserver's.
//
// A message that fits the server's max_payload travels as one NATS message
// without headers. A larger one is split into chunks sent back to back on
// the same subject and reply subject, each marked with the headers
// HeaderChunkID, HeaderChunk and HeaderChunkSize; Inbox, Mailbox and Request
// put them together again and hand out only whole messages, and report a
// message they had to drop with ErrIncomplete instead of losing it silently.
package wire
