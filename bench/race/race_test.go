package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/store/postgres/pgtest"
)

// The test binary is the race's tool server too, and runs its gateway's goals, as the race
// program does.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == toolServerArg {
		if err := serveToolServer(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 3 && os.Args[1] == gatewayArg {
		if err := gatewayGoals(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRace runs the whole race for one short round: every row is measured or says why
// not, every ratio is its figure over its baseline's, the biscuit row says it is not
// available, and the chart is a PNG. It asserts no speed. Each contender's set-up checks its
// engine refuses what it must (another client, a forged token, a tampered manifest), so a
// race of engines that allow everything fails here.
func TestRace(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a gateway and starts a tool server")
	}
	rep, err := run(1, time.Millisecond, 200*time.Millisecond, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]int{}
	for _, r := range rep.Rows {
		groups[r.Group]++
		switch {
		case r.Note != "":
			if r.NS != 0 || r.Ratio != 0 {
				t.Errorf("%s / %s: a figure beside the note %q", r.Contender, r.Baseline, r.Note)
			}
		case (r.NS <= 0 && !r.added) || r.BaselineNS <= 0 || r.Ratio != r.NS/r.BaselineNS:
			// (What capgate adds is a difference of two medians: one short round can make
			// it negative.)
			t.Errorf("%s / %s: %+v", r.Contender, r.Baseline, r)
		}
		if r.Goal > 0 && !r.AtLeast && r.Met != (r.Ratio <= r.Goal) || r.AtLeast && r.Met != (r.Ratio >= r.Goal) {
			t.Errorf("%s / %s: met %v with ratio %.2f and goal %.1f", r.Contender, r.Baseline, r.Met, r.Ratio, r.Goal)
		}
		if strings.Contains(r.Baseline, "biscuit") && !strings.HasPrefix(r.Note, "not available here") {
			t.Errorf("the biscuit row: %+v", r)
		}
	}
	// The MCP group is the call and what capgate adds to it, or one row saying why not.
	// The gateway's group is its three goals and the CPU per call that bounds the first.
	want := map[string]int{"decision": 2, "token": 4, "manifest": 2, "call": 1, "mcp": 2, "gateway": 4}
	for _, r := range rep.Rows {
		if r.Group == "mcp" && r.Note != "" {
			want["mcp"] = 1
		}
	}
	for g, n := range want {
		if groups[g] != n {
			t.Errorf("%d rows of %s, want %d", groups[g], g, n)
		}
	}
	if strings.HasPrefix(os.Getenv("CI"), "t") {
		for _, r := range rep.Rows {
			if r.Group == "mcp" && r.Note != "" {
				t.Errorf("the MCP row was not measured in CI: %s", r.Note)
			}
		}
	}
	wantPNG(t, func(path string) error { return writeChart(rep, path) })
	var table bytes.Buffer
	printTable(&table, rep)
	for _, r := range rep.Rows {
		if !strings.Contains(table.String(), r.Contender) || !strings.Contains(table.String(), r.Baseline) {
			t.Errorf("the table leaves out %s / %s:\n%s", r.Contender, r.Baseline, table.String())
		}
	}
}

// Every op runs one batch a round, in an order rotated by one each round, and an op that
// fails stops the race with its name.
func TestMeasure(t *testing.T) {
	var seq []string
	measuring := false
	mk := func(name string) *op {
		return &op{name: name, fn: func() error {
			if measuring {
				seq = append(seq, name)
			}
			return nil
		}}
	}
	ops := []*op{mk("a"), mk("b"), mk("c")}
	progress := func(s string) { measuring = measuring || strings.HasPrefix(s, "round") }
	if err := measure(ops, 4, time.Nanosecond, progress); err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if len(o.ns) != 4 || o.median() <= 0 {
			t.Errorf("%s: %v", o.name, o.ns)
		}
	}
	if got := strings.Join(seq, ""); got != "abcbcacababc" {
		t.Errorf("the rounds ran %s, want abc bca cab abc, one op a batch", got)
	}
	bad := &op{name: "wrong", fn: func() error { return errors.New("denied") }}
	if err := measure([]*op{mk("a"), bad}, 1, time.Microsecond, func(string) {}); err == nil || !strings.Contains(err.Error(), "wrong") {
		t.Errorf("a failing op: %v", err)
	}
}

// The scale runs at two small points of each axis, replicas on the test's PostgreSQL, and
// charts them; it asserts no speed.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("opens gateways")
	}
	saved := scaleAxes
	t.Cleanup(func() { scaleAxes = saved })
	scaleAxes = slices.Clone(scaleAxes)
	for i := range scaleAxes {
		scaleAxes[i].ns = []int{1, 10}
		if scaleAxes[i].postgres {
			scaleAxes[i].ns = []int{1, 2}
		}
	}
	pts, err := runScale(100*time.Millisecond, 2, pgtest.DSN(t), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 8 {
		t.Fatalf("points: %+v", pts)
	}
	for _, p := range pts {
		if p.CallsPerSec <= 0 || p.P99MS <= 0 {
			t.Errorf("point %+v", p)
		}
	}
	wantPNG(t, func(path string) error { return writeScaleChart(pts, path) })
	var table bytes.Buffer
	printScale(&table, pts)
	for _, want := range []string{"10 audit records", "10 live tokens", "10 more capabilities", "2 replicas on PostgreSQL"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("no %q in the table:\n%s", want, table.String())
		}
	}
	// Without a database the replicas are left out, saying so.
	var said []string
	pts, err = runScale(100*time.Millisecond, 2, "", func(s string) { said = append(said, s) })
	if err != nil || len(pts) != 6 || !strings.Contains(strings.Join(said, "\n"), "replicas on PostgreSQL left out") {
		t.Errorf("without PostgreSQL: %d points, %v, said %q", len(pts), err, said)
	}
}

// wantPNG has write draw a chart into a file and checks the file is a PNG.
func wantPNG(t *testing.T, write func(path string) error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := write(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
}

// An earlier run's points are read back as they were written, and anything else is refused.
func TestReadScale(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"axis":"live tokens","n":1,"calls_per_sec":10,"p99_ms":1},{"axis":"replicas on PostgreSQL","n":2,"calls_per_sec":5,"p99_ms":2}]`)
	pts, err := readScale(good)
	if err != nil || len(pts) != 2 || pts[1].Axis != "replicas on PostgreSQL" || pts[1].CallsPerSec != 5 {
		t.Fatalf("%+v %v", pts, err)
	}
	for name, body := range map[string]string{
		"empty.json": `[]`, "text.json": `scale calls/s`, "axis.json": `[{"axis":"moons","n":1,"calls_per_sec":1,"p99_ms":1}]`,
		"zero.json": `[{"axis":"live tokens","n":1,"calls_per_sec":0,"p99_ms":1}]`,
	} {
		if _, err := readScale(write(name, body)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := readScale(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file accepted")
	}
}
