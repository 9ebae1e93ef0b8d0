package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/capgate/capgate/internal/bench"
)

// scalePoint is one gateway run at one scale: calls/s and p99 with n tokens live, n audit
// records already in the log, n more capabilities registered or n replicas on PostgreSQL.
type scalePoint struct {
	Axis        string  `json:"axis"` // one of scaleAxes' names
	N           int     `json:"n"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P99MS       float64 `json:"p99_ms"`
}

// scaleAxes are the scales `--scale` runs at, each axis from its smallest: what grows with
// each is the question, so every figure is read against the axis's first. An axis whose
// postgres is set runs on PostgreSQL, and only when a database is given.
var scaleAxes = []scaleAxis{
	{"live tokens", []int{1, 1_000, 100_000}, false, func(n int) bench.GatewayOptions { return bench.GatewayOptions{LiveTokens: n} }},
	{"audit records", []int{1_000, 100_000, 1_000_000, 10_000_000}, false, func(n int) bench.GatewayOptions { return bench.GatewayOptions{PriorRecords: n} }},
	{"more capabilities", []int{10, 1_000, 10_000}, false, func(n int) bench.GatewayOptions { return bench.GatewayOptions{Capabilities: n} }},
	{"replicas on PostgreSQL", []int{1, 2, 3}, true, func(n int) bench.GatewayOptions { return bench.GatewayOptions{Replicas: n} }},
}

type scaleAxis struct {
	name     string
	ns       []int
	postgres bool
	opts     func(n int) bench.GatewayOptions
}

// runScale runs bench.Gateway at every scale point, workers workers for d each. pg is the
// PostgreSQL database of the axes that need one (the run makes a schema of its own in it and
// drops it); with none, those axes are left out, saying so.
func runScale(d time.Duration, workers int, pg string, progress func(string)) ([]scalePoint, error) {
	var pts []scalePoint
	for _, ax := range scaleAxes {
		if ax.postgres && pg == "" {
			progress(fmt.Sprintf("scale: %s left out: no PostgreSQL given (--postgres URL)", ax.name))
			continue
		}
		for _, n := range ax.ns {
			progress(fmt.Sprintf("scale: %d %s", n, ax.name))
			o := ax.opts(n)
			o.Duration, o.Workers = d, workers
			if ax.postgres {
				o.Store = pg
			}
			r, err := bench.Gateway(o)
			if err != nil {
				return nil, fmt.Errorf("scale: %d %s: %w", n, ax.name, err)
			}
			pts = append(pts, scalePoint{Axis: ax.name, N: n, CallsPerSec: r.CallsPerSec, P99MS: r.P99MS})
		}
	}
	return pts, nil
}

// readScale reads the points of an earlier run's --scale --json output.
func readScale(path string) ([]scalePoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pts []scalePoint
	if err := json.Unmarshal(data, &pts); err != nil {
		return nil, fmt.Errorf("%s: not the JSON of --scale --json: %w", path, err)
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no points", path)
	}
	for i, p := range pts {
		if p.N <= 0 || p.CallsPerSec <= 0 || p.P99MS <= 0 || !slices.ContainsFunc(scaleAxes, func(a scaleAxis) bool { return a.name == p.Axis }) {
			return nil, fmt.Errorf("%s: point %d: an axis of --scale and positive figures are needed", path, i)
		}
	}
	return pts, nil
}

// printScale writes the points as a table, each beside its axis's first.
func printScale(w io.Writer, pts []scalePoint) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scale\t   calls/s\t  of the first\t  p99 (ms)\t  of the first")
	first := map[string]scalePoint{}
	for _, p := range pts {
		f, ok := first[p.Axis]
		if !ok {
			first[p.Axis], f = p, p
		}
		fmt.Fprintf(tw, "%d %s\t%10.0f\t%13.2fx\t%10.2f\t%13.2fx\n", p.N, p.Axis, p.CallsPerSec, p.CallsPerSec/f.CallsPerSec, p.P99MS, p.P99MS/f.P99MS)
	}
	tw.Flush()
}

// writeScaleChart draws calls/s and p99 of each axis against its scale, each as a ratio to
// the axis's first point, in two panels: the store's scale (tokens, records, capabilities; a
// log axis) and the replicas on PostgreSQL (a linear one). Flat lines at 1× are what "appends
// stay flat" looks like.
func writeScaleChart(pts []scalePoint, path string) error {
	colors := []color.RGBA{{R: 0x3b, G: 0x6e, B: 0xa8, A: 0xff}, {R: 0xc0, G: 0x50, B: 0x30, A: 0xff},
		{R: 0x2e, G: 0x8b, B: 0x57, A: 0xff}, {R: 0x80, G: 0x50, B: 0xa0, A: 0xff}}
	panel := func(title, xLabel string, logX bool, which func(postgres bool) bool) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xLabel
		p.Y.Label.Text = "ratio to the axis's smallest scale"
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		p.Add(plotter.NewGrid())
		for i, ax := range scaleAxes {
			if !which(ax.postgres) {
				continue
			}
			var calls, p99 plotter.XYs
			var f scalePoint
			for _, pt := range pts {
				if pt.Axis != ax.name {
					continue
				}
				if len(calls) == 0 {
					f = pt
				}
				calls = append(calls, plotter.XY{X: float64(pt.N), Y: pt.CallsPerSec / f.CallsPerSec})
				p99 = append(p99, plotter.XY{X: float64(pt.N), Y: pt.P99MS / f.P99MS})
			}
			if len(calls) == 0 {
				continue
			}
			for j, series := range []plotter.XYs{calls, p99} {
				l, pts, err := plotter.NewLinePoints(series)
				if err != nil {
					return nil, err
				}
				l.Color, pts.Color = colors[i%len(colors)], colors[i%len(colors)]
				l.Width = vg.Points(2)
				what := "calls/s"
				if j == 1 {
					what = "p99"
					l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
				}
				p.Add(l, pts)
				p.Legend.Add(ax.name+": "+what, l)
			}
		}
		// The legend low on the left, where the lines near 1× leave room.
		p.Legend.Top, p.Legend.Left = false, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), vg.Points(8)
		// From 0, and at least to 2×, so that a flat line reads as flat.
		p.Y.Min, p.Y.Max = 0, math.Max(2, p.Y.Max*1.1)
		return p, nil
	}
	store, err := panel("calls/s and p99 as the store grows", "live tokens, audit records already in the log, more capabilities (log scale)", true,
		func(pg bool) bool { return !pg })
	if err != nil {
		return err
	}
	replicas, err := panel("and with replicas on one PostgreSQL", "replicas (one process, one machine)", false,
		func(pg bool) bool { return pg })
	if err != nil {
		return err
	}
	replicas.X.Min = 1
	const w, h = 14 * vg.Inch, 5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(16), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(12)}
	canvases := plot.Align([][]*plot.Plot{{store, replicas}}, tiles, dc)
	store.Draw(canvases[0][0])
	replicas.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
