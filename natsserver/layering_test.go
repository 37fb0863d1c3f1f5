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
	const module = "github.com/strads-go/strads/"
	embedders := []string{"natsserver", "job", "cli", "internal/testhelper"}
	out, err := exec.Command("go", "list", "-deps", "-test=false", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		checked++
		if slices.Contains(embedders, pkg) || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "bench/") {
			continue
		}
		if slices.Contains(fields[1:], server) {
			t.Errorf("package %s links %s; only %v, cmd/… and bench/… may", pkg, server, embedders)
		}
	}
	if checked < 10 {
		t.Fatalf("go list named %d packages of the module, want the whole module", checked)
	}
}
