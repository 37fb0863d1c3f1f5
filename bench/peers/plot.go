package main

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
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
	p.X.Tick.Marker = plot.TickerFunc(decadeTicks)
	p.Y.Label.Text = "(F − F_best) / F_best, log scale"
	p.Y.Tick.Marker = plot.TickerFunc(decadeTicks)
	p.Legend.Top = true // in the headroom above the data (see p.Y.Max)
	p.Add(plotter.NewGrid())
	floor := math.Pow(10, math.Round(math.Log10(o.targetRel/floorFactor)))
	y := func(f float64) float64 { return math.Log10(max(relDiff(f, c.best), floor)) }
	ymax, xmin, xmax := o.targetRel, math.Inf(1), 0.0
	lx := func(t float64) float64 { return math.Log10(max(t, 1e-3)) }

	for i, w := range o.workers {
		legend := false
		for _, r := range c.runs {
			if r.system != "strads" || r.workers != w || len(r.trace) == 0 {
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
				p.Legend.Add(fmt.Sprintf("strads w=%d", w), l)
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
		col := palette[(len(o.workers)+k)%len(palette)]
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

// decadeTicks returns the ticks of an axis that shows log10 of the values
// (as in bench/lassosched): a labelled tick at every power of ten (every
// other one, or sparser, over many decades) and unlabelled ones between.
func decadeTicks(min, max float64) []plot.Tick {
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	step := 1 + (hi-lo)/12
	var ticks []plot.Tick
	for k := lo; k <= hi; k++ {
		if v := float64(k); v >= min && v <= max {
			t := plot.Tick{Value: v}
			if k%step == 0 {
				t.Label = decadeLabel(k)
			}
			ticks = append(ticks, t)
		}
		for i := 2; i <= 9; i++ {
			if m := float64(k) + math.Log10(float64(i)); m >= min && m <= max {
				ticks = append(ticks, plot.Tick{Value: m})
			}
		}
	}
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 3 { // less than two decades: label 2 and 5 too
		for i, t := range ticks {
			m := math.Pow(10, t.Value-math.Floor(t.Value+1e-9))
			if t.Label == "" && (math.Abs(m-2) < 1e-6 || math.Abs(m-5) < 1e-6) {
				ticks[i].Label = strconv.FormatFloat(math.Pow(10, t.Value), 'g', 2, 64)
			}
		}
	}
	return ticks
}

// decadeLabel returns 10^k as 0.01, 0.1, 1, 10, 100 or 1e-3, 1e3 …
func decadeLabel(k int) string {
	if k >= -2 && k <= 2 {
		return strconv.FormatFloat(math.Pow(10, float64(k)), 'f', -1, 64)
	}
	return fmt.Sprintf("1e%d", k)
}
