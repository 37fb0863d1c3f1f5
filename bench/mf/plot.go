package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// colors of the algorithms.
var colors = map[string]color.Color{
	"rotation":    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"unscheduled": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"ccd":         color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// plotRMSE draws, for every rank of the curves, the test RMSE of the curve
// runs against time on a log axis, one colour per algorithm: run 1 thick,
// the others thin; the noise level and the target dotted. It writes
// dir/rmse-r<rank>.png and .svg.
func plotRMSE(dir string, runs []*run, o *options) error {
	for _, rank := range o.curveRanks {
		var rs []*run
		for _, r := range runs {
			if r.phase == "curve" && r.v.rank == rank {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		if err := plotRank(filepath.Join(dir, fmt.Sprintf("rmse-r%d", rank)), rank, rs, o); err != nil {
			return err
		}
	}
	return nil
}

// plotRank draws the curve runs of one rank.
func plotRank(path string, rank int, runs []*run, o *options) error {
	p := plot.New()
	g := o.gen
	p.Title.Text = fmt.Sprintf("Matrix factorization at rank %d, %d ratings (%d users × %d items, true rank %d, noise %g), %d workers",
		rank, g.Ratings, g.Users, g.Items, g.Rank, g.Noise, o.workers)
	if o.data != "" {
		p.Title.Text = fmt.Sprintf("Matrix factorization at rank %d, %s, %d workers", rank, o.data, o.workers)
	}
	p.X.Label.Text = "time since the job started (s), loading excluded"
	p.Y.Label.Text = "test RMSE (log scale)"
	p.Y.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, v := range []float64{0.1, 0.12, 0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2} {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	ymin, ymax, xmax := math.Inf(1), 0.0, 0.0
	legend := map[variant]bool{}
	for _, r := range runs {
		var pts plotter.XYs
		for _, e := range r.model.Trace {
			pts = append(pts, plotter.XY{X: e.Time.Seconds(), Y: e.TestRMSE})
			ymin, ymax, xmax = min(ymin, e.TestRMSE), max(ymax, e.TestRMSE), max(xmax, e.Time.Seconds())
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = colors[r.v.algo]
		if !legend[r.v] {
			legend[r.v] = true
			l.Width = vg.Points(1.5)
			p.Legend.Add(r.v.String(), l)
		} else {
			l.Width = vg.Points(0.5)
		}
		p.Add(l)
	}
	for _, h := range []struct {
		y    float64
		name string
	}{{g.Noise, fmt.Sprintf("noise level %g", g.Noise)}, {o.target * g.Noise, fmt.Sprintf("target %g", o.target*g.Noise)}} {
		if o.data != "" {
			break
		}
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: h.y}, {X: max(xmax, 1e-3), Y: h.y}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 0x60}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		p.Legend.Add(h.name, l)
		ymin = min(ymin, h.y)
	}
	if o.runs > 1 {
		p.Legend.Add("(thin: runs 2…)")
	}
	p.Y.Min, p.Y.Max = ymin*0.95, ymax*1.05
	p.X.Min = 0
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(9*vg.Inch, 5.5*vg.Inch, path+ext); err != nil {
			return err
		}
	}
	return nil
}
