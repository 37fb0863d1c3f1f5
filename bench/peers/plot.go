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

// palette colours strads's variants, in order (matplotlib's tab10), and
// the peers after them.
var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// peerGlyphs are the peers' markers: filled at the whole-job time, hollow
// at the fit-only time.
var peerGlyphs = map[string][2]draw.GlyphDrawer{
	"scikit-learn": {draw.BoxGlyph{}, draw.SquareGlyph{}},
	"glmnet":       {draw.PyramidGlyph{}, draw.TriangleGlyph{}},
	"liblinear":    {draw.CircleGlyph{}, draw.RingGlyph{}},
}

// floorFactor: relative sub-optimalities at or below target-rel/floorFactor
// (F_best's own, 0, and strads's below F_best) are drawn at that floor.
const floorFactor = 1000

// plotCase draws (F − F_best)/F_best on a log axis against the whole-job
// time: strads's reports (its metrics, shifted by its setup time: the wall
// time less the time from its first round to the end), run 1 thick and the
// others thin and dashed, and every peer as a point at its median whole-job
// time (filled) and fit-only time (hollow).
func plotCase(path string, c *theCase, st []stats, o *options) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, shape %s (%d × %d), λ = %g·λ_max", c.prob, c.shape.name, c.n, c.p, c.fit.ratio)
	p.X.Label.Text = "time since the process started (s), log scale"
	p.X.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	p.Y.Label.Text = "(F − F_best) / F_best, log scale"
	p.Y.Tick.Marker = plot.TickerFunc(logaxis.Ticks)
	p.Legend.Top = true // in the headroom above the data (see p.Y.Max)
	p.Add(plotter.NewGrid())
	floor := math.Pow(10, math.Round(math.Log10(o.targetRel/floorFactor)))
	y := func(f float64) float64 { return math.Log10(max(relDiff(f, c.best), floor)) }
	ymax, xmin, xmax := o.targetRel, math.Inf(1), 0.0
	lx := func(t float64) float64 { return math.Log10(max(t, 1e-3)) }

	var variants []string // strads's labels, in order
	for _, sched := range o.schedules {
		for _, w := range o.workers {
			variants = append(variants, stradsLabel(w, sched))
		}
	}
	for i, v := range variants {
		legend := false
		for _, r := range c.runs {
			if r.system != "strads" || r.label() != v || len(r.trace) == 0 {
				continue
			}
			shift := r.wall - r.elapsed
			var pts plotter.XYs
			for _, s := range r.trace {
				pts = append(pts, plotter.XY{X: lx(s[0] + shift), Y: y(s[1])})
				ymax = max(ymax, relDiff(s[1], c.best))
				xmin, xmax = min(xmin, s[0]+shift), max(xmax, s[0]+shift)
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = palette[i%len(palette)]
			if !legend {
				l.Width = vg.Points(1.5)
				p.Legend.Add(v, l)
				legend = true
			} else {
				l.Width = vg.Points(0.6)
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			p.Add(l)
		}
	}
	for k, x := range st {
		if x.system == "strads" || math.IsNaN(x.obj) || math.IsInf(x.time, 1) {
			continue
		}
		col := palette[(len(variants)+k)%len(palette)]
		for _, filled := range []bool{true, false} {
			t := x.time
			if !filled {
				t = x.fit
			}
			if math.IsNaN(t) {
				continue
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: lx(t), Y: y(x.obj)}})
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(4)
			if filled {
				sc.GlyphStyle.Shape = peerGlyphs[x.system][0]
				p.Legend.Add(x.system+" (whole job)", sc)
			} else {
				sc.GlyphStyle.Shape = peerGlyphs[x.system][1]
				p.Legend.Add(x.system+" (fit only)", sc)
			}
			p.Add(sc)
			xmin, xmax = min(xmin, t), max(xmax, t)
			ymax = max(ymax, relDiff(x.obj, c.best))
		}
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0.1, 1
	}
	xlo, xhi := lx(xmin)-0.1, lx(xmax)+0.1
	lt := math.Log10(o.targetRel)
	tl, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: lt}, {X: xhi, Y: lt}})
	if err != nil {
		return err
	}
	tl.Color = color.Gray{Y: 0x60}
	tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(tl)
	p.Legend.Add(fmt.Sprintf("target %g", o.targetRel), tl)
	if o.runs > 1 {
		p.Legend.Add("(strads thin dashed: runs 2…)")
	}
	p.Legend.Add(fmt.Sprintf("(≤ %g drawn at %g)", floor, floor))
	// Headroom above the highest point, about a third of the height, for
	// the legend.
	p.Y.Min = math.Log10(floor) - 0.5
	p.Y.Max = math.Log10(ymax) + 0.5*(math.Log10(ymax)-p.Y.Min) + 0.3
	p.X.Min, p.X.Max = xlo, xhi
	return p.Save(9*vg.Inch, 5.5*vg.Inch, path)
}
