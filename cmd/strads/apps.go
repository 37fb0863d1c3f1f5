package main

import (
	"context"
	"io"
	"slices"
	"strings"
)

// appCommand is an app's part of the command line. Each app's file
// registers its own from an init function, so that adding an app touches
// no other file of the command.
type appCommand struct {
	// summary describes the app in a few words, for the usage.
	summary string
	// job runs a whole job on this machine: strads <app> [flags].
	job func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// role runs one role of a job: strads scheduler|coordinator|worker
	// --app <app> [flags].
	role func(ctx context.Context, role string, args []string, stdout, stderr io.Writer) error
	// gen writes a synthetic data set: strads gen <app> [flags]; nil if the
	// app has no generator.
	gen func(args []string, stdout, stderr io.Writer) error
}

var apps = map[string]appCommand{}

// register adds the app name to the command line.
func register(name string, a appCommand) {
	if _, dup := apps[name]; dup {
		panic("strads: app " + name + " registered twice")
	}
	apps[name] = a
}

// appNames returns the registered apps, sorted.
func appNames() []string {
	names := make([]string, 0, len(apps))
	for name := range apps {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// appFlag returns the value of --app in args ("lasso" if absent), before
// the flags are parsed: the app decides which other flags there are.
func appFlag(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "app" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return "lasso"
}
