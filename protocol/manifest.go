package protocol

import (
	"fmt"
	"maps"
	"slices"

	"github.com/strads-go/strads/inputfile"
)

// Version is the version of the protocol: every role of a job must speak
// the same one. It changes whenever a message of this package changes in a
// way an older role would misread: 2 brought the check task (Task.Check),
// 3 the message header (Header: type and run id), Partial.Check and the
// presence probe, 4 the final report (Task.Final, Partial.Final), 5 the
// parts that workers pass each other (Pass, on pass.<k>), 6 checkpoints
// (Task.Checkpoint, PlanRequest.Checkpoint, Stored, the join reply's
// Resume), 7 the heartbeat's sender and sequence, 8 a Manifest.Data over
// the whole content and rollbacks to round 0.
const Version = 8

// Manifest is what a role believes about the job it joins (DESIGN "Roles, subjects and messages"). The
// coordinator holds the job's own; it refuses a role whose manifest differs
// from it, with a message that names the field, and answers every accepted
// role with the job's settings.
type Manifest struct {
	// App names the app, as schmp.Program.Name. Roles of different apps
	// are refused; an empty App (a role, or a job, that does not say) is
	// not compared.
	App string `msgpack:"app"`
	// Version is the role's protocol Version. The worker and scheduler
	// nodes, and the coordinator for its own, send Version when it is 0.
	Version int `msgpack:"ver"`
	// Settings are the job-wide settings the role was given, by name (a
	// command's flag names, without dashes), in their canonical text form.
	// A setting that the role was not given is absent: the role takes the
	// job's value, which the join reply carries.
	Settings map[string]string `msgpack:"settings,omitempty"`
	// Data fingerprints the data the role reads (see Fingerprint); empty
	// when the role reads none. All roles that read data must agree: with
	// the coordinator's Data where it has one, otherwise with the first
	// role to send one.
	Data string `msgpack:"data,omitempty"`
}

// Check returns why the coordinator refuses a role whose manifest is role,
// m being the job's, or nil: a different App (where both name one), a
// different Version, or a setting that the role names with another value
// than the job's, or that the job lacks. The first difference is named, the
// settings in the order of their names, as e.g.
//
//	setting "lambda" is 0.2, the job's is 0.1
//
// Data is not compared here: the coordinator compares it across roles.
// The values, which came from the network and are compared exact, are
// printed Printable.
func (m Manifest) Check(role Manifest) error {
	switch {
	case m.App != "" && role.App != "" && role.App != m.App:
		return fmt.Errorf("app is %q, the job's is %q", role.App, m.App)
	case role.Version != m.Version:
		return fmt.Errorf("protocol version is %d, the job's is %d", role.Version, m.Version)
	}
	for _, k := range slices.Sorted(maps.Keys(role.Settings)) {
		v := role.Settings[k]
		job, ok := m.Settings[k]
		switch {
		case !ok:
			return fmt.Errorf("setting %q is %s, the job has no such setting", k, Printable(v))
		case v != job:
			return fmt.Errorf("setting %q is %s, the job's is %s", k, Printable(v), Printable(job))
		}
	}
	return nil
}

// Fingerprint returns the fingerprint of the content of the file at path,
// for Manifest.Data: "<size>-<crc>", where size is the file's size in
// bytes, in decimal, and crc is the CRC-32C (Castagnoli) of the whole
// content in 8 hexadecimal digits, as FingerprintSum writes them
// (inputfile.Sum: a data set over NATS not fetched whole gives its
// index's). Two roles that read files differing in any byte are told
// apart (but for a CRC collision). What is not a regular file (a FIFO, a
// device, a directory) is an error, before it is opened.
func Fingerprint(path string) (string, error) {
	size, crc, err := inputfile.Sum(path)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	return FingerprintSum(size, crc), nil
}

// FingerprintSum returns the Fingerprint of content of size bytes whose
// CRC-32C is crc.
func FingerprintSum(size int64, crc uint32) string {
	return fmt.Sprintf("%d-%08x", size, crc)
}
