package coordinator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/schmp"
)

// TestMetricsCSV writes rows through checkpoints, a rollback to one and a
// rollback to the start, and marks the row of the model written: the
// file holds the rows of the run as it went on, the header once, and one
// written row.
func TestMetricsCSV(t *testing.T) {
	sample := func(round uint64) schmp.Sample {
		return schmp.Sample{Round: round, Progress: schmp.Progress{Objective: float64(round), Metrics: []schmp.Metric{{Name: "acc", Value: float64(round) / 10}}}}
	}
	tests := []struct {
		name  string
		kept  bool
		round uint64 // kept round
		want  []string
	}{
		{"the last row", false, 0, []string{"0:0", "1:0", "2:0", "3:1"}},
		{"a kept round", true, 2, []string{"0:0", "1:0", "2:1", "3:0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.csv")
			f, err := atomicfile.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Abort()
			m := newMetricsCSV(f)
			write := func(rounds ...uint64) {
				for _, r := range rounds {
					if err := m.write(sample(r), rowStats{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(m.markRound(0, 4))
			write(0, 1, 2)
			must(m.rewind(0)) // a spare before any checkpoint: back to the start
			write(0, 1)
			must(m.markRound(1, 4))
			write(2, 3)
			must(m.rewind(1))
			write(2, 3)
			if err := m.write(schmp.Sample{Round: 4}, rowStats{}); err == nil {
				t.Error("a report without the first one's metrics was taken")
			}
			must(m.rewind(1))
			write(2, 3)
			must(m.markWritten(tt.round, tt.kept))
			must(f.Commit())
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if lines[0] != strings.TrimSuffix(metricsHeader, "\n")+",acc" {
				t.Fatalf("header %q", lines[0])
			}
			var got []string
			for _, l := range lines[1:] {
				c := strings.Split(l, ",")
				got = append(got, c[1]+":"+c[17])
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("rows (round:written) %v, want %v", got, tt.want)
			}
		})
	}
}
