package protocol

import "context"

// Interrupted returns the error text that a worker or scheduler sends the
// coordinator when its context ends for cause (a signal) while the job
// runs: "interrupted", and the cause unless it is only context.Canceled,
// e.g. "interrupted: interrupt signal received". The coordinator fails
// the job with it at once, naming the node (DESIGN "How a job fails").
func Interrupted(cause error) string {
	if cause == nil || cause == context.Canceled {
		return "interrupted"
	}
	return "interrupted: " + cause.Error()
}
