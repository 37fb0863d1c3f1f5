package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/schmp"
)

// metricsCSV is the metrics CSV being written (Options.Metrics): a row per
// report, the header at the first, where the rows after each checkpoint
// begin (a rollback rewinds there), and at the end the row of the model
// written marked.
type metricsCSV struct {
	f *atomicfile.File
	// names are the app's metrics, fixed by the first report; nil before
	// the header is written.
	names  []string
	header int64 // the header's length
	rows   []metricRow
	marks  map[uint64]int64 // by round: where the rows after it begin
}

// metricRow is a row of the metrics CSV: the round of its report, and the
// offset of its written column's digit.
type metricRow struct {
	round   uint64
	written int64
}

func newMetricsCSV(f *atomicfile.File) *metricsCSV {
	return &metricsCSV{f: f, marks: map[uint64]int64{}}
}

// write writes s as a row, with r the per-round means since the row
// before; the first row writes the header, with the app's metric names,
// which every later row must repeat.
func (m *metricsCSV) write(s schmp.Sample, r rowStats) error {
	if err := m.checkNames(s.Metrics); err != nil {
		return fmt.Errorf("objective after round %d: %w", s.Round, err)
	}
	writeSample(m.f.Writer, s, r)
	off, err := m.f.Offset()
	if err != nil {
		return err
	}
	m.rows = append(m.rows, metricRow{round: s.Round, written: off + 1})
	m.f.WriteString(",0") // markWritten sets the written row's to 1
	writeAppMetrics(m.f.Writer, s)
	return nil
}

// checkNames writes the header with the app's columns at the first
// report, and checks that later reports name the same metrics.
func (m *metricsCSV) checkNames(ms []schmp.Metric) error {
	if m.names == nil {
		m.names = make([]string, len(ms))
		var h strings.Builder
		h.WriteString(strings.TrimSuffix(metricsHeader, "\n"))
		for i, a := range ms {
			if a.Name == "" || strings.ContainsAny(a.Name, ",\"\n\r") {
				return fmt.Errorf("app metric %q: want a name without commas, quotes or newlines", a.Name)
			}
			m.names[i] = a.Name
			h.WriteString("," + a.Name)
		}
		h.WriteString("\n")
		m.f.WriteString(h.String())
		m.header = int64(h.Len())
		return nil
	}
	if len(ms) != len(m.names) {
		return fmt.Errorf("%d app metrics, %d at the first report", len(ms), len(m.names))
	}
	for i, a := range ms {
		if a.Name != m.names[i] {
			return fmt.Errorf("app metric %d is %q, %q at the first report", i, a.Name, m.names[i])
		}
	}
	return nil
}

// markRound notes that the rows after round begin here, for a rollback to
// it; of the marks of checkpoints it keeps the last keep, and the start's
// (round 0), which a rollback goes back to while none is committed.
func (m *metricsCSV) markRound(round uint64, keep int) error {
	mark, err := m.f.Mark()
	if err != nil {
		return err
	}
	m.marks[round] = mark
	if rounds := slices.Sorted(maps.Keys(m.marks)); len(rounds) > keep {
		for _, r := range rounds[:len(rounds)-keep] {
			if r > 0 {
				delete(m.marks, r)
			}
		}
	}
	return nil
}

// rewind discards the rows after round, whose mark must be known; rewound
// to before the header, the next report writes it again.
func (m *metricsCSV) rewind(round uint64) error {
	mark, ok := m.marks[round]
	if !ok {
		return fmt.Errorf("the metrics written up to round %d are not known", round)
	}
	if err := m.f.Rewind(mark); err != nil {
		return err
	}
	m.rows = slices.DeleteFunc(m.rows, func(r metricRow) bool { return r.written >= mark })
	if mark < m.header {
		m.names, m.header = nil, 0
	}
	return nil
}

// markWritten sets the written column of the row of the model written:
// the last report's, or with kept, the last row of round (schmp.Kept).
func (m *metricsCSV) markWritten(round uint64, kept bool) error {
	if len(m.rows) == 0 {
		return nil
	}
	i := len(m.rows) - 1
	if kept {
		for i >= 0 && m.rows[i].round != round {
			i--
		}
		if i < 0 {
			return fmt.Errorf("the model kept is the report of round %d, which the metrics do not hold", round)
		}
	}
	return m.f.Patch(m.rows[i].written, []byte("1"))
}
