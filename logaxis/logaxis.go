// Package logaxis draws the logarithmic axes of strads' plots (strads plot
// and the bench programs'). They plot log10 of the values on a linear
// axis, with these ticks, rather than use plot.LogScale, whose axis label
// padding is computed at the arithmetic midpoint and leaves a large blank
// band above the data.
package logaxis

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// Ticks returns the ticks of an axis from min to max that shows log10 of
// the values: a tick labelled 10^k at every integer k (every other one, or
// sparser, over many decades) and unlabelled ones at log10(i·10^k) for
// i = 2…9, of which 2 and 5 are labelled too when fewer than three powers
// of ten are. It is a plot.TickerFunc.
func Ticks(min, max float64) []plot.Tick {
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	step := 1 + (hi-lo)/12
	var ticks []plot.Tick
	labelled := 0
	for k := lo; k <= hi; k++ {
		if v := float64(k); v >= min && v <= max {
			t := plot.Tick{Value: v}
			if k%step == 0 {
				t.Label = decadeLabel(k)
				labelled++
			}
			ticks = append(ticks, t)
		}
		for i := 2; i <= 9; i++ {
			if m := float64(k) + math.Log10(float64(i)); m >= min && m <= max {
				ticks = append(ticks, plot.Tick{Value: m})
			}
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
