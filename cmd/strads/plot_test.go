package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lassoMetrics runs a short Lasso job with the extra flags and returns the
// path of the metrics CSV it wrote.
func lassoMetrics(t *testing.T, data, name string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	args := append([]string{"lasso", "--data", data, "--lambda-ratio", "0.05", "--progress", "0", "--metrics", path}, extra...)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("lasso: exit %d: %s", code, stderr)
	}
	return path
}

// chartMagic are the first bytes of each chart format.
var chartMagic = map[string]string{
	".png": "\x89PNG\r\n\x1a\n",
	".svg": "<?xml",
	".pdf": "%PDF-",
}

// TestPlot draws the metrics of real Lasso jobs, two schedules of the same
// data, and checks that the chart is written in the format its name asks
// for, with what the command says it drew.
func TestPlot(t *testing.T) {
	data := genData(t)
	priority := lassoMetrics(t, data, "priority.csv")
	random := lassoMetrics(t, data, "random.csv", "--schedule", "random", "--workers", "2")
	both := priority + "," + random
	cases := []struct {
		name string
		args []string
		out  string // the chart's file name
		want string // in stdout
	}{
		{"objective against time", []string{"--metrics", both}, "a.png", "objective against time_s, 2 of 2 files drawn"},
		{"sub-optimality against rounds", []string{"--metrics", both, "--y", "subopt", "--x", "round"}, "b.svg", "F − F* (F* = "},
		{"sub-optimality to a target", []string{"--metrics", priority, "--metrics", random, "--y", "subopt", "--target", "0"}, "c.png", "(F* = 0, --target), log scale"},
		{"gap", []string{"--metrics", both, "--y", "gap"}, "d.pdf", "gap, log scale against time_s"},
		{"an app's column", []string{"--metrics", random, "--y", "latency_ms", "--x", "updates", "--title", "latency"}, "e.svg", "latency_ms against updates, 1 of 1 files drawn"},
		{"one file, linear", []string{"--metrics", priority, "--y", "gap", "--scale", "linear"}, "f.png", "gap against time_s"},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.out)
			code, stdout, stderr := runCLI(t, append([]string{"plot", "-o", out}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, "wrote "+out) {
				t.Errorf("stdout %q, want %q", stdout, tc.want)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if magic := chartMagic[filepath.Ext(out)]; len(b) < 100 || !bytes.HasPrefix(b, []byte(magic)) {
				t.Errorf("%s: %d bytes starting %q, want %q…", tc.out, len(b), b[:min(len(b), 8)], magic)
			}
			if err := validChart(filepath.Ext(out), b); err != nil {
				t.Errorf("%s: %v", tc.out, err)
			}
		})
	}
}

// validChart checks more than the first bytes of a chart: a PNG decodes,
// an SVG is well-formed XML with an svg element at its root.
func validChart(ext string, b []byte) error {
	switch ext {
	case ".png":
		_, err := png.Decode(bytes.NewReader(b))
		return err
	case ".svg":
		d := xml.NewDecoder(bytes.NewReader(b))
		root := ""
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if se, ok := tok.(xml.StartElement); ok && root == "" {
				root = se.Name.Local
			}
		}
		if root != "svg" {
			return fmt.Errorf("root element %q, want svg", root)
		}
	}
	return nil
}

// TestPlotBadInput checks that bad files and flags exit with status 2 and
// one line naming the file and line, or the column, and write no chart.
func TestPlotBadInput(t *testing.T) {
	real := lassoMetrics(t, genData(t), "m.csv")
	rows := readLines(t, real)
	header, row := rows[0], rows[1]
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	model := file("model.csv", "# strads linear model\n# app: lasso\nindex,value\n3,0.5\n")
	short := file("short.csv", header+"\n"+row+"\n"+row[:strings.LastIndex(row, ",")]+"\n")
	cells := strings.Split(row, ",")
	cells[2] = "x" + strings.Repeat("1", 1000)
	nan := file("nan.csv", header+"\n"+strings.Join(cells, ",")+"\n")
	cells = strings.Split(row, ",")
	cells[5] = "" // no gap, as mf and LDA write it
	noGap := file("nogap.csv", header+"\n"+strings.Join(cells, ",")+"\n")
	if err := os.Mkdir(filepath.Join(dir, "sub.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string // in the one line on stderr
	}{
		{"not a metrics CSV", []string{"--metrics", real + "," + model}, "model.csv:1: not a metrics CSV"},
		{"a short row", []string{"--metrics", short}, "short.csv:3: 17 cells, the header names 18 columns"},
		{"not a number", []string{"--metrics", nan}, `nan.csv:2: column objective: "x111`},
		{"empty", []string{"--metrics", file("empty.csv", "")}, "empty.csv: empty, not a metrics CSV"},
		{"no rows", []string{"--metrics", file("header.csv", header+"\n")}, "header.csv: a header and no rows"},
		{"a bare quote", []string{"--metrics", file("quote.csv", header+"\n1,\"2\n")}, "quote.csv:2: not a metrics CSV"},
		{"no such file", []string{"--metrics", filepath.Join(dir, "absent.csv")}, "absent.csv: no such file"},
		{"no such column", []string{"--metrics", real, "--y", "test_mse"}, `m.csv: no column "test_mse"; it has time_s, round,`},
		{"no such x column", []string{"--metrics", real, "--x", "seconds"}, `--x: ` + real + `: no column "seconds"`},
		{"nothing positive on a log axis", []string{"--metrics", noGap, "--y", "gap"}, "--y gap: no points in nogap.csv: every row has an empty cell in gap or time_s"},
		{"zeros on a log axis", []string{"--metrics", real, "--y", "wait_ms", "--scale", "log"}, "--y wait_ms: no value > 0 in m.csv"},
		{"no values", []string{"--metrics", noGap, "--y", "gap", "--scale", "linear"}, "--y gap: no points in nogap.csv"},
		{"no --metrics", nil, "--metrics FILE is required"},
		{"an empty name", []string{"--metrics", real + ","}, "an empty file name"},
		{"unknown format", []string{"--metrics", real, "-o", filepath.Join(dir, "c.gif")}, "want a file ending in .png, .svg or .pdf"},
		{"no -o", []string{"--metrics", real, "-o", ""}, "-o FILE is required"},
		{"-o an input", []string{"--metrics", file("in.svg", header+"\n"+row+"\n"), "-o", filepath.Join(dir, "in.svg")}, "would overwrite an input"},
		{"-o a directory", []string{"--metrics", real, "-o", dir + "/sub.png"}, "not a regular file but a directory"},
		{"-o a link to an input", []string{"--metrics", real, "-o", link}, "would overwrite an input"},
		{"--target without subopt", []string{"--metrics", real, "--target", "1"}, "--target is for --y subopt"},
		{"a bad --target", []string{"--metrics", real, "--y", "subopt", "--target", "NaN"}, "want a finite number"},
		{"a bad --scale", []string{"--metrics", real, "--scale", "ln"}, `--scale "ln"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "chart.png")
			code, stdout, stderr := runCLI(t, append([]string{"plot", "-o", out}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || len(stderr) > 400 {
				t.Errorf("exit %d, stderr %q, want 2 and %q in one short line (stdout %q)", code, stderr, tc.want, stdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a chart was written: %v", err)
			}
		})
	}
}

// TestPlotOptimum checks F* and the sign of the sub-optimality: the best
// objective of all the runs, the least for an objective that falls (a
// loss), the greatest for one that rises (LDA's log-likelihood), and
// --target where given.
func TestPlotOptimum(t *testing.T) {
	two := 2.0
	cases := []struct {
		name      string
		objs      [][]float64
		target    *float64
		fstar, sg float64
	}{
		{"falling", [][]float64{{5, 3, 1}, {6, 2, 1.5}}, nil, 1, 1},
		{"rising", [][]float64{{-9, -7, -6}, {-8, -5.5, -5.8}}, nil, -5.5, -1},
		{"empty cells", [][]float64{{math.NaN(), 4, 3}, {math.NaN()}}, nil, 3, 1},
		{"a target", [][]float64{{5, 3}}, &two, 2, 1},
	}
	for _, tc := range cases {
		s := &chartSpec{y: "subopt", target: tc.target}
		if fstar, sg, _ := s.optimum(tc.objs); fstar != tc.fstar || sg != tc.sg {
			t.Errorf("%s: F* = %g, sign %g; want %g, %g", tc.name, fstar, sg, tc.fstar, tc.sg)
		}
	}
}

// TestDistinctTicks checks that the linear axes never repeat a tick label,
// where gonum's default ticker does (a narrow range far from zero).
func TestDistinctTicks(t *testing.T) {
	tests := []struct{ min, max float64 }{
		{1.2188 + 1e-12, 1.2188 + 3e-11}, // an objective moving in its 11th digit
		{1000, 1000.03},                  // times past 1,000 s, apart by ms
		{0, 0.02},                        // a range the default labels well
	}
	for _, tt := range tests {
		labels := map[string]bool{}
		for _, tk := range (distinctTicks{}).Ticks(tt.min, tt.max) {
			if tk.Label == "" {
				continue
			}
			if labels[tk.Label] {
				t.Errorf("[%v, %v]: label %q twice", tt.min, tt.max, tk.Label)
			}
			labels[tk.Label] = true
		}
		if len(labels) < 2 {
			t.Errorf("[%v, %v]: %d labels", tt.min, tt.max, len(labels))
		}
	}
}
