package natsserver

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestOnlyEmbeddersLinkServer checks the layering of DESIGN "Package layout": the only
// packages that link nats-server are this one and those that embed it
// (job, cli, the commands and the benchmarks, and internal/testhelper for
// the tests); schmp, the roles, the engines and the apps carry a NATS
// client only.
func TestOnlyEmbeddersLinkServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	const server = "github.com/nats-io/nats-server/v2/server"
	embedders := []string{"natsserver", "job", "cli", "internal/testhelper"}
	for pkg, deps := range moduleDeps(t) {
		if slices.Contains(embedders, pkg) || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "bench/") {
			continue
		}
		if slices.Contains(deps, server) {
			t.Errorf("package %s links %s; only %v, cmd/… and bench/… may", pkg, server, embedders)
		}
	}
}

// TestAppsNeedNoCoordinator checks that an app needs schmp, not the
// runtime's coordinator: no package under apps/ depends on it.
func TestAppsNeedNoCoordinator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	const coordinator = module + "coordinator"
	for pkg, deps := range moduleDeps(t) {
		if strings.HasPrefix(pkg, "apps/") && slices.Contains(deps, coordinator) {
			t.Errorf("package %s depends on %s; an app needs schmp only", pkg, coordinator)
		}
	}
}

const module = "github.com/strads-go/strads/"

// moduleDeps returns every package of the module (its path within the
// module) with its dependencies, tests left out, or skips the test if go
// list cannot run.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	pkgs := make(map[string][]string)
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.HasPrefix(fields[0], module) {
			pkgs[strings.TrimPrefix(fields[0], module)] = fields[1:]
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list named %d packages of the module, want the whole module", len(pkgs))
	}
	return pkgs
}
