package protocol

// Version is the version of the protocol: every role of a job must speak
// the same one. It changes whenever a message of this package changes in a
// way an older role would misread.
const Version = 1

// Manifest is what a role believes about the job it joins (DESIGN §2). The
// coordinator holds the job's own; it refuses a role whose manifest differs
// from it, with a message that names the field, and answers every accepted
// role with the job's settings.
type Manifest struct {
	// App names the app, as schmp.Program.Name.
	App string `msgpack:"app"`
	// Version is the role's protocol Version.
	Version int `msgpack:"ver"`
	// Settings are the job-wide settings the role was given, by name (a
	// command's flag names, without dashes), in their canonical text form.
	// A setting that the role was not given is absent: the role takes the
	// job's value, which the join reply carries.
	Settings map[string]string `msgpack:"settings,omitempty"`
	// Data fingerprints the data the role reads (see Fingerprint); empty
	// when the role reads none. All roles that read data must agree.
	Data string `msgpack:"data,omitempty"`
}
