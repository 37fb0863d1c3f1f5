package main

import (
	"io"
	"strings"
)

// runGen writes a synthetic data set for the app named by args[0].
func runGen(args []string, stdout, stderr io.Writer) error {
	var gens []string
	for _, name := range appNames() {
		if apps[name].gen != nil {
			gens = append(gens, name)
		}
	}
	if len(args) == 0 || apps[args[0]].gen == nil {
		return usagef("want \"strads gen APP [flags] -o FILE\", APP one of %s", strings.Join(gens, ", "))
	}
	return apps[args[0]].gen(args[1:], stdout, stderr)
}
