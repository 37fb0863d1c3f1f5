package main

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/strads-go/strads/logaxis"
)

// scheduleColors colour the schedules (bench/lassosched's, orange for
// Shotgun, purple and brown for priority and cyclic without the check).
var scheduleColors = map[string]color.Color{
	"priority": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"random":   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"cyclic":   color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"shotgun":  color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	// Without the dependency check.
	"priority-nocheck": color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"cyclic-nocheck":   color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// groupDashes tell the layouts and block sizes apart, in the order of
// their first variant: solid, dashed, dotted, dash-dotted.
var groupDashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// plotShape draws the relative sub-optimality of run 1 of every variant on
// c against the whole-job time (its reports shifted by its setup), log–log,
// one colour per schedule and one dash pattern per layout and block size;
// a run that diverged as a cross at its whole-job time, at the top. Values
// at or below the smallest level/1000 (F* itself, 0) are drawn there.
func plotShape(path string, c *shapeCase, o *options) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lasso, shape %s (%d × %d), λ = %g·λ_max: run 1 of each variant", c.shape.name, c.n, c.p, c.shape.ratio)
	p.X.Label.Text = "time since the process started (s), log scale"
	p.X.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	p.Y.Label.Text = "(F − F*) / F*, log scale"
	p.Y.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	floor := math.Pow(10, math.Round(math.Log10(o.levels[len(o.levels)-1]/1000)))
	lx := func(t float64) float64 { return math.Log10(max(t, 1e-2)) }
	ly := func(f float64) float64 { return math.Log10(max(relSub(f, c.fstar), floor)) }
	var groups []variant
	ymax, xmin, xmax := o.levels[0], math.Inf(1), 0.0
	var diverged []plotter.XYs
	var divVariants []variant
	var lines []*plotter.Line
	var names []string
	for _, v := range o.variants {
		g := v.group()
		gi := 0
		for gi < len(groups) && groups[gi] != g {
			gi++
		}
		if gi == len(groups) {
			groups = append(groups, g)
		}
		for _, r := range c.runs {
			if r.v != v || r.run != 1 {
				continue
			}
			if r.status == "diverged" {
				diverged = append(diverged, plotter.XYs{{X: lx(r.wall)}})
				divVariants = append(divVariants, v)
				xmin, xmax = min(xmin, r.wall), max(xmax, r.wall)
				continue
			}
			var pts plotter.XYs
			for _, s := range r.trace {
				t := s.time + r.setup
				pts = append(pts, plotter.XY{X: lx(t), Y: ly(s.objective)})
				ymax = max(ymax, relSub(s.objective, c.fstar))
				xmin, xmax = min(xmin, t), max(xmax, t)
			}
			if len(pts) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = scheduleColors[v.schedule]
			l.Width = vg.Points(1.4)
			l.Dashes = groupDashes[gi%len(groupDashes)]
			lines, names = append(lines, l), append(names, v.name())
		}
	}
	for i, l := range lines {
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0.1, 1
	}
	top := math.Log10(ymax) + 0.3
	for i, pts := range diverged {
		pts[0].Y = top
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(5)
		sc.GlyphStyle.Color = scheduleColors[divVariants[i].schedule]
		p.Add(sc)
		p.Legend.Add(divVariants[i].name()+": diverged (at its whole-job time)", sc)
	}
	xlo, xhi := lx(xmin)-0.1, lx(xmax)+0.1
	for _, lvl := range o.levels {
		y := math.Log10(lvl)
		tl, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: y}, {X: xhi, Y: y}})
		if err != nil {
			return err
		}
		tl.Color = color.Gray{Y: 0x60}
		tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(tl)
	}
	p.Legend.Add(fmt.Sprintf("(levels dotted; ≤ %g drawn at %g)", floor, floor))
	// Headroom above the data, about a third of the height, for the legend.
	p.Y.Min = math.Log10(floor) - 0.3
	p.Y.Max = top + 0.45*(top-p.Y.Min)
	p.X.Min, p.X.Max = xlo, xhi
	return p.Save(10*vg.Inch, 6.5*vg.Inch, path)
}
