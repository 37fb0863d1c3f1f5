package main

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/strads-go/strads/logaxis"
	"github.com/strads-go/strads/scheduler"
)

// colors of the schedules in the plot, when the variants differ in their
// schedule only.
var colors = map[scheduler.Policy]color.Color{
	scheduler.Priority: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	scheduler.Random:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	scheduler.Cyclic:   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// palette colours the variants otherwise, in order (matplotlib's tab10).
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// variantColor returns the colour of the i-th variant v.
func (o *options) variantColor(i int, v *variant) color.Color {
	if o.axisName() == "schedule" {
		if c, ok := colors[v.policy]; ok {
			return c
		}
	}
	return palette[i%len(palette)]
}

// plotObjective draws (F − F*)/F* on a log axis (log10 drawn on a linear
// one, see logaxis.Ticks) against time, one colour per variant: the first
// run drawn thick, the other runs thin and dashed. Reports at F* itself
// (sub-optimality 0) cannot be drawn on a log axis and are left out.
func plotObjective(path string, runs []*run, o *options, fstar float64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lasso, %d×%d, λ = %g·λ_max", o.gen.Samples, o.gen.Features, o.lambdaRatio)
	if f := o.fixedAxes(); f != "" {
		p.Title.Text += ", " + f
	}
	p.X.Label.Text = "time since the first round (s)"
	p.Y.Label.Text = "relative sub-optimality (F − F*) / F*, log scale"
	p.Y.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, v := range o.variants {
		legend := false
		for _, r := range runs {
			if r.v != v {
				continue
			}
			var pts plotter.XYs
			for _, s := range r.res.Trace {
				if x := relSub(s.Objective, fstar); x > 0 {
					pts = append(pts, plotter.XY{X: s.Time.Seconds(), Y: math.Log10(x)})
					ymin, ymax = min(ymin, x), max(ymax, x)
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = o.variantColor(i, v)
			if !legend {
				l.Width = vg.Points(1.5)
				p.Legend.Add(v.name, l)
				legend = true
			} else {
				l.Width = vg.Points(0.6)
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			p.Add(l)
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = o.target/10, 1
	}
	// The target as a dotted horizontal line.
	ymin, ymax = min(ymin, o.target), max(ymax, o.target)
	xmax := 0.0
	for _, r := range runs {
		if n := len(r.res.Trace); n > 0 {
			xmax = max(xmax, r.res.Trace[n-1].Time.Seconds())
		}
	}
	lt := math.Log10(o.target)
	tl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: lt}, {X: max(xmax, 1e-3), Y: lt}})
	if err != nil {
		return err
	}
	tl.Color = color.Gray{Y: 0x60}
	tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(tl)
	p.Legend.Add(fmt.Sprintf("target %g", o.target), tl)
	if o.runs > 1 {
		p.Legend.Add("(thin dashed: runs 2…)")
	}
	p.Y.Min, p.Y.Max = math.Log10(ymin/2), math.Log10(ymax*2)
	p.X.Min = 0
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}
