package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeChart draws the ratio of every measured row as a horizontal bar on a logarithmic
// scale (a bar to the right of 1× is slower than what it is compared with, to the left
// faster; for a rate, calls/s, the other way round, which its label says) and saves it as a PNG at path. Rows not measured here are left out.
func writeChart(rep report, path string) error {
	var labels []string
	var logs plotter.Values
	for _, row := range rep.Rows {
		if row.Ratio <= 0 {
			continue
		}
		label := row.Contender + " / " + row.Baseline
		if row.Unit == "calls/s" {
			label += " (a rate: left is slower)"
		}
		labels = append(labels, label)
		logs = append(logs, math.Log10(row.Ratio))
	}
	if len(logs) == 0 {
		return fmt.Errorf("chart: no row was measured")
	}
	// Bars are drawn bottom up; the table reads top down.
	slices.Reverse(labels)
	slices.Reverse(logs)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("capgate against the tools people pick instead: ratios in one run (%s, %s)", rep.Date[:10], rep.Machine)
	p.X.Label.Text = "ratio (figure / what it is compared with), log scale"
	bars, err := plotter.NewBarChart(logs, vg.Points(12))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	bars.Color = color.RGBA{R: 0x3b, G: 0x6e, B: 0xa8, A: 0xff}
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	// Each bar's ratio written beside its end, so that the chart reads without the table.
	var xys plotter.XYLabels
	for i, v := range logs {
		xys.XYs = append(xys.XYs, plotter.XY{X: max(v, 0), Y: float64(i)})
		xys.Labels = append(xys.Labels, fmt.Sprintf("  %.2f×", math.Pow(10, v)))
	}
	ratios, err := plotter.NewLabels(xys)
	if err != nil {
		return err
	}
	for i := range ratios.TextStyle {
		ratios.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(ratios)
	p.NominalY(labels...)
	lo, hi := math.Floor(min(0, slices.Min(logs))), math.Ceil(max(0, slices.Max(logs))+0.3)
	p.X.Min, p.X.Max = lo, max(hi, lo+1)
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for e := math.Floor(min); e <= max; e++ {
			ts = append(ts, plot.Tick{Value: e, Label: ratioLabel(math.Pow(10, e))})
			for _, m := range []float64{2, 5} {
				if v := e + math.Log10(m); v < max {
					ts = append(ts, plot.Tick{Value: v})
				}
			}
		}
		return ts
	})
	return p.Save(10*vg.Inch, vg.Length(1.2+0.38*float64(len(logs)))*vg.Inch, path)
}

func ratioLabel(r float64) string {
	if r < 1 {
		return fmt.Sprintf("%g×", r)
	}
	return fmt.Sprintf("%.0f×", r)
}
