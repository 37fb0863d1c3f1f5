package protocol

// Presence is a coordinator's probe, on SubjectCoordinator, for another
// coordinator of its job's name, and every coordinator's answer to it
// (DESIGN "Roles, subjects and messages"). A coordinator answers from its start to its end; one that
// finds another refuses to start (ErrNameTaken).
type Presence struct {
	Header
	// Ticket is a random id of the coordinator, not its run id (which a
	// probe must not learn): of two coordinators that start at once, the
	// one with the smaller ticket goes on.
	Ticket string `msgpack:"ticket"`
	// Host and PID say where the coordinator runs, for the refusal's
	// message.
	Host string `msgpack:"host,omitempty"`
	PID  int    `msgpack:"pid,omitempty"`
	// Since is when the coordinator started, in Unix nanoseconds.
	Since int64 `msgpack:"since"`
	// Running is set in the answer of a coordinator that holds the name:
	// it has found no other, and admits its job's nodes.
	Running bool `msgpack:"running,omitempty"`
}
