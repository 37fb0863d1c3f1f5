package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/strads-go/strads/atomicfile"
	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/logaxis"
)

// runtimeColumns are the first columns of every metrics CSV, the runtime's
// (coordinator's metrics writer, DESIGN "Observability"); the app's follow the others.
var runtimeColumns = []string{"time_s", "round", "objective", "nnz", "updates", "gap"}

// plotFormats are the chart formats strads plot writes, by file extension.
var plotFormats = []string{"png", "svg", "pdf"}

// runPlot draws one or more metrics CSVs (--metrics of any app) into one
// chart, a line per file: a column, or the sub-optimality of the objective,
// against time or rounds.
func runPlot(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	var files []string
	fs.Func("metrics", "metrics CSV `files` that --metrics wrote, comma-separated or the flag repeated: a line each, named after the file", func(s string) error {
		for f := range strings.SplitSeq(s, ",") {
			if f == "" {
				return errors.New("an empty file name")
			}
			files = append(files, f)
		}
		return nil
	})
	out := fs.String("o", "", "write the chart to `file`: .png, .svg or .pdf")
	x := fs.String("x", "time", "the x axis: time (the column time_s), round, or any column")
	y := fs.String("y", "objective", "the y axis: objective, gap, subopt (sub-optimality F − F*, F* = --target or the best objective of all the files), or any column")
	var target *float64
	fs.Func("target", "F* of --y subopt (default: the best objective of all the files)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("want a finite number, not %q", s)
		}
		target = &v
		return nil
	})
	scale := fs.String("scale", "auto", "the y axis' scale: log (values ≤ 0 left out), linear, or auto (log for gap and subopt, linear otherwise)")
	title := fs.String("title", "", "the chart's title (default: what it shows)")
	if err := cli.Parse(fs, args, stdout, "strads plot --metrics FILE[,FILE…] -o OUT.png|.svg|.pdf [--x time|round] [--y objective|gap|subopt|COLUMN] [--target F]"); err != nil {
		return err
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(*out)), ".")
	switch {
	case len(files) == 0:
		return cli.Usagef("--metrics FILE is required")
	case *out == "":
		return cli.Usagef("-o FILE is required")
	case !slices.Contains(plotFormats, format):
		return cli.Usagef("-o %s: want a file ending in .png, .svg or .pdf", *out)
	case slices.ContainsFunc(files, func(f string) bool { return atomicfile.Same(f, *out) }):
		return cli.Usagef("-o %s would overwrite an input", *out)
	case target != nil && *y != "subopt":
		return cli.Usagef("--target is for --y subopt")
	}
	if _, err := atomicfile.Target(*out); err != nil {
		return cli.Usagef("-o %s: %w", *out, err)
	}
	spec := chartSpec{x: *x, y: *y, target: target, title: *title}
	switch *scale {
	case "auto":
		spec.log = *y == "gap" || *y == "subopt"
	case "log", "linear":
		spec.log = *scale == "log"
	default:
		return cli.Usagef("--scale %q: want log, linear or auto", *scale)
	}
	runs := make([]*metricsFile, len(files))
	for i, f := range files {
		m, err := readMetricsFile(f)
		if err != nil {
			return cli.UsageError(err)
		}
		runs[i] = m
	}
	p, note, err := spec.draw(runs)
	if err != nil {
		return cli.UsageError(err)
	}
	wt, err := p.WriterTo(9*vg.Inch, 5.5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("-o %s: %w", *out, err)
	}
	if err := atomicfile.Write(*out, func(w *bufio.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", *out, note)
	return nil
}

// metricsFile is a metrics CSV as --metrics writes it.
type metricsFile struct {
	path   string
	header []string
	rows   [][]float64 // a NaN for an empty cell
}

// readMetricsFile reads the metrics CSV at path: the runtime's columns
// first, every row as long as the header, every cell a number or empty.
// Its errors name the file and line.
func readMetricsFile(path string) (*metricsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	m := &metricsFile{path: path}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: not a metrics CSV: %w", path, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if m.header == nil {
			if len(rec) < len(runtimeColumns) || !slices.Equal(rec[:len(runtimeColumns)], runtimeColumns) {
				return nil, fmt.Errorf("%s:%d: not a metrics CSV of strads --metrics: want a header that starts %s", path, line, strings.Join(runtimeColumns, ","))
			}
			m.header = slices.Clone(rec)
			continue
		}
		if len(rec) != len(m.header) {
			return nil, fmt.Errorf("%s:%d: %d cells, the header names %d columns", path, line, len(rec), len(m.header))
		}
		row := make([]float64, len(rec))
		for i, c := range rec {
			if c == "" {
				row[i] = math.NaN()
				continue
			}
			if row[i], err = strconv.ParseFloat(c, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: column %s: %s is not a number", path, line, m.header[i], clip(c))
			}
		}
		m.rows = append(m.rows, row)
	}
	switch {
	case m.header == nil:
		return nil, fmt.Errorf("%s: empty, not a metrics CSV of strads --metrics", path)
	case len(m.rows) == 0:
		return nil, fmt.Errorf("%s: a header and no rows (the job made no report)", path)
	}
	return m, nil
}

// clip quotes s, shortened to a few dozen characters.
func clip(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}

// column returns the index of the column name, or an error that lists the
// columns there are.
func (m *metricsFile) column(name string) (int, error) {
	if i := slices.Index(m.header, name); i >= 0 {
		return i, nil
	}
	return -1, fmt.Errorf("%s: no column %q; it has %s", m.path, name, strings.Join(m.header, ", "))
}

// chartSpec is what strads plot draws.
type chartSpec struct {
	x, y   string   // the flags --x and --y
	target *float64 // --target, or nil
	log    bool     // a log y axis
	title  string
}

// xColumn returns the column of --x.
func (s *chartSpec) xColumn() string {
	if s.x == "time" {
		return "time_s"
	}
	return s.x
}

// yColumn returns the column of --y.
func (s *chartSpec) yColumn() string {
	if s.y == "subopt" {
		return "objective"
	}
	return s.y
}

// draw makes the chart of runs, a line each, and says in a few words what
// it shows. An error names the file, line or column at fault.
func (s *chartSpec) draw(runs []*metricsFile) (*plot.Plot, string, error) {
	xs, ys := make([][]float64, len(runs)), make([][]float64, len(runs))
	for k, m := range runs {
		xi, err := m.column(s.xColumn())
		if err != nil {
			return nil, "", fmt.Errorf("--x: %w", err)
		}
		yi, err := m.column(s.yColumn())
		if err != nil {
			return nil, "", fmt.Errorf("--y: %w", err)
		}
		for _, r := range m.rows {
			xs[k], ys[k] = append(xs[k], r[xi]), append(ys[k], r[yi])
		}
	}
	yLabel := s.y
	if s.y == "subopt" {
		fstar, sign, what := s.optimum(ys)
		for _, y := range ys {
			for i := range y {
				y[i] = sign * (y[i] - fstar)
			}
		}
		yLabel = fmt.Sprintf("sub-optimality %s (F* = %.10g, %s)", map[float64]string{1: "F − F*", -1: "F* − F"}[sign], fstar, what)
	}
	if s.log {
		yLabel += ", log scale"
	}

	p := plot.New()
	p.Title.Text = s.title
	if p.Title.Text == "" {
		p.Title.Text = fmt.Sprintf("%s against %s", s.yColumn(), s.x)
		if s.y == "subopt" {
			p.Title.Text = "sub-optimality against " + s.x
		}
	}
	p.X.Label.Text = map[string]string{"time_s": "time (s)"}[s.xColumn()]
	if p.X.Label.Text == "" {
		p.X.Label.Text = s.xColumn()
	}
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker = distinctTicks{}
	p.Y.Tick.Marker = distinctTicks{}
	if s.log {
		p.Y.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	}

	names := legendNames(runs)
	var drawn []string
	values, left, ymin, ymax := 0, 0, math.Inf(1), math.Inf(-1)
	for k := range runs {
		var pts plotter.XYs
		for i, x := range xs[k] {
			y := ys[k][i]
			if !finite(x) || !finite(y) {
				continue
			}
			values++
			if s.log {
				if y <= 0 {
					left++
					continue
				}
				ymin, ymax = min(ymin, y), max(ymax, y)
				y = math.Log10(y)
			}
			pts = append(pts, plotter.XY{X: x, Y: y})
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", runs[k].path, err)
		}
		c := plotutil.Color(k)
		l.Color, l.Width = c, vg.Points(1.5)
		l.Dashes = plotutil.Dashes(k / len(plotutil.DefaultColors))
		sc.Color, sc.Radius = c, vg.Points(2)
		if len(pts) > 60 {
			sc.Radius = 0 // too many to mark
		}
		p.Add(l, sc)
		p.Legend.Add(names[k], l)
		drawn = append(drawn, names[k])
	}
	if len(drawn) == 0 {
		if values == 0 {
			return nil, "", fmt.Errorf("--y %s: no points in %s: every row has an empty cell in %s or %s (a column the app does not report)", s.y, strings.Join(names, ", "), s.yColumn(), s.xColumn())
		}
		return nil, "", fmt.Errorf("--y %s: no value > 0 in %s to draw on a log axis", s.y, strings.Join(names, ", "))
	}
	if s.log {
		// Whole decades, so that at least two ticks are labelled.
		p.Y.Min, p.Y.Max = math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
		if p.Y.Max-p.Y.Min < 1 {
			p.Y.Min, p.Y.Max = p.Y.Min-1, p.Y.Max+1
		}
		p.Y.Max += 0.3 * (p.Y.Max - p.Y.Min) // headroom for the legend
	}
	note := fmt.Sprintf("%s against %s, %d of %d files drawn", p.Y.Label.Text, s.xColumn(), len(drawn), len(runs))
	if left > 0 {
		note += fmt.Sprintf("; %d values ≤ 0 left off the log axis", left)
	}
	return p, note, nil
}

// optimum returns F* of the sub-optimality, and its sign: 1 for a
// minimized objective (F − F*), -1 for a maximized one (F* − F, LDA's
// log-likelihood), which the runs tell: maximized if the objective rose
// from the first row to the last over all of them. F* is --target, or the
// best objective of all the runs.
func (s *chartSpec) optimum(objs [][]float64) (fstar, sign float64, what string) {
	var rise float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, o := range objs {
		var first, last = math.NaN(), math.NaN()
		for _, v := range o {
			if !finite(v) {
				continue
			}
			if math.IsNaN(first) {
				first = v
			}
			last = v
			lo, hi = min(lo, v), max(hi, v)
		}
		if !math.IsNaN(first) {
			rise += last - first
		}
	}
	sign, fstar = 1, lo
	if rise > 0 {
		sign, fstar = -1, hi
	}
	if s.target != nil {
		return *s.target, sign, "--target"
	}
	return fstar, sign, "the best objective seen"
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// legendNames returns the runs' names in the legend: their files' base
// names, or the paths as given where two base names are the same.
func legendNames(runs []*metricsFile) []string {
	names := make([]string, len(runs))
	seen := map[string]int{}
	for i, m := range runs {
		names[i] = filepath.Base(m.path)
		seen[names[i]]++
	}
	for i, m := range runs {
		if seen[names[i]] > 1 {
			names[i] = m.path
		}
	}
	return names
}

// distinctTicks is gonum's default ticker, whose labels repeat on a narrow
// range (an objective that moves in its sixth digit, times past 1,000 s
// apart by milliseconds), with its labels then given the fewest
// significant digits that tell them apart.
type distinctTicks struct{ plot.DefaultTicks }

// Ticks implements plot.Ticker.
func (d distinctTicks) Ticks(min, max float64) []plot.Tick {
	ticks := d.DefaultTicks.Ticks(min, max)
	distinct := func(label func(plot.Tick) string) bool {
		seen := map[string]bool{}
		for _, t := range ticks {
			if t.Label == "" {
				continue
			}
			l := label(t)
			if seen[l] {
				return false
			}
			seen[l] = true
		}
		return true
	}
	if distinct(func(t plot.Tick) string { return t.Label }) {
		return ticks
	}
	for prec := 2; prec <= 17; prec++ {
		label := func(t plot.Tick) string { return strconv.FormatFloat(t.Value, 'g', prec, 64) }
		if distinct(label) {
			for i, t := range ticks {
				if t.Label != "" {
					ticks[i].Label = label(t)
				}
			}
			break
		}
	}
	return ticks
}
