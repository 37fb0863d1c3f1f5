package cli

import (
	"flag"
	"slices"

	"github.com/strads-go/strads/atomicfile"
)

// A pathFlag is a flag of the command that names a file.
type pathFlag struct {
	name, path string
	output     bool
}

// pathFlags returns the command's flags that name files, given: the
// runtime's outputs (--out, --metrics) and its credential files, the app's
// per-role flags (outputs where App.Outputs says so, inputs otherwise),
// and the job's data (Job.Data) where no flag names it.
func (s *session) pathFlags(j *Job) []pathFlag {
	var out []pathFlag
	add := func(name string, output bool) {
		if f := s.fs.Lookup(name); f != nil && f.Value.String() != "" {
			out = append(out, pathFlag{name, f.Value.String(), output})
		}
	}
	add("out", true)
	add("metrics", true)
	for _, name := range []string{"creds", "tls-ca", "tls-cert", "tls-key"} {
		add(name, false)
	}
	for _, name := range s.app.PerRole {
		add(name, slices.Contains(s.app.Outputs, name))
	}
	if j.Data != "" && !slices.ContainsFunc(out, func(p pathFlag) bool { return p.path == j.Data }) {
		out = append(out, pathFlag{"data", j.Data, false})
	}
	return out
}

// isPrefix reports whether the flag --name names the prefix of files rather
// than a file: its usage says PREFIX (see flag.UnquoteUsage).
func (s *session) isPrefix(name string) bool {
	f := s.fs.Lookup(name)
	if f == nil {
		return false
	}
	placeholder, _ := flag.UnquoteUsage(f)
	return placeholder == "PREFIX"
}

// checkPaths refuses, before the job runs, an output flag of the command
// that names the same file as an input flag or as another output
// (atomicfile.Same: through links, hard links too), and one that names
// something other than a regular file (atomicfile.Target): usage errors.
// Only a process that runs the coordinator writes outputs. It returns the
// function that ends the protection of the job's inputs: until then,
// atomicfile refuses to create an output over any of them, so that the
// files an app's coordinator names itself (schmp.Outputter, from an --out
// prefix) are checked too, when they are created.
func (s *session) checkPaths(j *Job) (release func(), err error) {
	if !s.role.Has(Coordinator) {
		return func() {}, nil
	}
	paths := s.pathFlags(j)
	for i, o := range paths {
		if !o.output || s.isPrefix(o.name) {
			continue
		}
		if _, err := atomicfile.Target(o.path); err != nil {
			return nil, Usagef("--%s %s: %v", o.name, o.path, err)
		}
		for k, p := range paths {
			if k == i || (p.output && k > i) || s.isPrefix(p.name) {
				continue
			}
			if atomicfile.Same(o.path, p.path) {
				what := "an input"
				if p.output {
					what = "another output"
				}
				return nil, Usagef("--%s %s: the same file as --%s %s, %s", o.name, o.path, p.name, p.path, what)
			}
		}
	}
	var inputs []string
	for _, p := range paths {
		if !p.output {
			inputs = append(inputs, p.path)
		}
	}
	return atomicfile.Protect(inputs...), nil
}
