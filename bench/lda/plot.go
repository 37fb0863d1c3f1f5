package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// palette colours the variants, in order (matplotlib's tab10).
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// plotLogLik draws the log-likelihood per token of runs against time
// (byTime) or iterations, one colour per variant: the first seed thick,
// the others thin and dashed.
func plotLogLik(path string, runs []*run, o *options, byTime bool) error {
	p := plot.New()
	first := runs[0]
	if byTime {
		p.Title.Text = fmt.Sprintf("LDA, rotation vs unscheduled: K = %d, %d workers, %d tokens", first.topics, first.workers, first.trace[len(first.trace)-1].Tokens/int64(max(first.iters, 1)))
		p.X.Label.Text = "time since the first round (s)"
	} else {
		p.Title.Text = fmt.Sprintf("LDA rotation on P workers: K = %d (stale n_k within a sub-round)", first.topics)
		p.X.Label.Text = "iteration"
	}
	p.Y.Label.Text = "log-likelihood per token, log p(w, z) / N"
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	var variants []string
	for _, r := range runs {
		if !contains(variants, r.variant) {
			variants = append(variants, r.variant)
		}
	}
	for i, v := range variants {
		legend := false
		for _, r := range runs {
			if r.variant != v {
				continue
			}
			var pts plotter.XYs
			for _, s := range r.trace[1:] { // the random start is far below
				x := s.Iter
				if byTime {
					x = s.Time.Seconds()
				}
				pts = append(pts, plotter.XY{X: x, Y: s.LogLik})
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.Color = palette[i%len(palette)]
			line.Width = vg.Points(2)
			if r.seed > 1 {
				line.Width = vg.Points(1)
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(line)
			if !legend {
				p.Legend.Add(v, line)
				legend = true
			}
		}
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
