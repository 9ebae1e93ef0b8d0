package terminal_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/terminal"
	"github.com/capgate/capgate/sdk"
)

func TestHistory(t *testing.T) {
	app, _ := newApp(t)
	const bob = "client-bob"
	for i := 1; i <= 3; i++ {
		run(t, app, cmd("echo "+strconv.Itoa(i)))
	}
	if _, err := call(t, app, terminal.ExecuteID, cmd("echo bob"), bob); err != nil {
		t.Fatal(err)
	}
	out, err := call(t, app, terminal.HistoryID, `{}`, alice)
	if err != nil {
		t.Fatal(err)
	}
	es := out["entries"].([]any)
	if num(t, out["total"]) != 3 || len(es) != 3 {
		t.Fatalf("alice's history: %v", out)
	}
	first := es[0].(map[string]any)
	if first["command"] != "echo 3" || first["status"] != "success" || num(t, first["exit_code"]) != 0 || first["background"] != false {
		t.Fatalf("newest entry: %v", first)
	}
	if _, err := time.Parse(time.RFC3339Nano, first["started_at"].(string)); err != nil {
		t.Fatalf("started_at: %v", err)
	}
	out, _ = call(t, app, terminal.HistoryID, `{"count":1,"offset":1}`, alice)
	if es := out["entries"].([]any); len(es) != 1 || es[0].(map[string]any)["command"] != "echo 2" {
		t.Fatalf("count 1 offset 1: %v", out)
	}
	// Bob sees his own command only, and cannot read alice's output.
	out, _ = call(t, app, terminal.HistoryID, `{}`, bob)
	if num(t, out["total"]) != 1 {
		t.Fatalf("bob's history: %v", out)
	}
	bobID := num(t, out["entries"].([]any)[0].(map[string]any)["id"])
	aliceID := num(t, first["id"])
	_, err = call(t, app, terminal.ReadOutputID, fmt.Sprintf(`{"id":%d}`, aliceID), bob)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	_, err = call(t, app, terminal.ReadOutputID, fmt.Sprintf(`{"id":%d}`, bobID), alice)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	out, err = call(t, app, terminal.ReadOutputID, fmt.Sprintf(`{"id":%d}`, bobID), bob)
	if err != nil || out["stdout"] != "bob\n" || out["command"] != "echo bob" || out["output_kept"] != true {
		t.Fatalf("bob's output: %v, %v", out, err)
	}
	_, err = call(t, app, terminal.ReadOutputID, `{}`, "client-carol")
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	// The latest of alice's by default.
	if out, _ := call(t, app, terminal.ReadOutputID, `{}`, alice); out["stdout"] != "3\n" {
		t.Fatalf("latest: %v", out)
	}
}

func TestHistoryBounded(t *testing.T) {
	app, _ := newApp(t)
	for i := 0; i < terminal.MaxHistory+5; i++ {
		run(t, app, cmd("true"))
	}
	out, _ := call(t, app, terminal.HistoryID, `{"count":100}`, alice)
	es := out["entries"].([]any)
	if num(t, out["total"]) != terminal.MaxHistory || len(es) != terminal.MaxHistory {
		t.Fatalf("total %v, %d entries", out["total"], len(es))
	}
	if id := num(t, es[len(es)-1].(map[string]any)["id"]); id != 6 {
		t.Fatalf("oldest kept id %d, want 6", id)
	}
	_, err := call(t, app, terminal.ReadOutputID, `{"id":5}`, alice)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	// A long command is shown cut in the list and whole by read_output.
	long := "printf %s " + strings.Repeat("x", 3*terminal.MaxListedCommandBytes)
	run(t, app, cmd(long))
	out, _ = call(t, app, terminal.HistoryID, `{"count":1}`, alice)
	if c := out["entries"].([]any)[0].(map[string]any)["command"].(string); len(c) > terminal.MaxListedCommandBytes || !strings.HasSuffix(c, "…") {
		t.Fatalf("listed command of %d bytes", len(c))
	}
	if out, _ := call(t, app, terminal.ReadOutputID, `{}`, alice); out["command"] != long {
		t.Fatal("read_output does not show the whole command")
	}
}

// The history keeps at most MaxRetainedOutputBytes of output: older outputs go first, their
// entries stay.
func TestRetainedOutputBounded(t *testing.T) {
	app, _ := newApp(t)
	n := terminal.MaxRetainedOutputBytes/terminal.MaxOutputBytes + 4
	for i := 0; i < n; i++ {
		run(t, app, cmd(`sh -c 'head -c `+strconv.Itoa(terminal.MaxOutputBytes)+` /dev/zero | tr "\0" x'`))
	}
	kept := 0
	for id := 1; id <= n; id++ {
		out, err := call(t, app, terminal.ReadOutputID, `{"id":`+strconv.Itoa(id)+`}`, alice)
		if err != nil {
			t.Fatal(err)
		}
		if out["output_kept"] == true {
			kept += len(out["stdout"].(string))
		} else if out["stdout"] != "" || out["status"] != "success" {
			t.Fatalf("a dropped output: %v", out["status"])
		}
	}
	if kept > terminal.MaxRetainedOutputBytes || kept < terminal.MaxRetainedOutputBytes-terminal.MaxOutputBytes {
		t.Fatalf("%d bytes of output kept", kept)
	}
	if out, _ := call(t, app, terminal.ReadOutputID, `{"id":1}`, alice); out["output_kept"] != false {
		t.Fatal("the oldest output is still kept")
	}
}

func TestBackgroundSession(t *testing.T) {
	app, _ := newApp(t)
	out := run(t, app, `{"command":"cat","background":true,"stdin":"first\n"}`)
	if out["status"] != "running" {
		t.Fatalf("%v", out)
	}
	id := num(t, out["id"])
	w := func(params, client string) (map[string]any, error) {
		return call(t, app, terminal.WriteInputID, params, client)
	}
	res, err := w(fmt.Sprintf(`{"id":%d,"input":"hello\n"}`, id), alice)
	if err != nil || num(t, res["bytes_written"]) != 6 || res["closed"] != false {
		t.Fatalf("write_input: %v, %v", res, err)
	}
	eventually(t, app, id, func(o map[string]any) bool {
		return o["stdout"] == "first\nhello\n" && o["status"] == "running" && o["exit_code"] == nil
	})
	// Another caller cannot write to it.
	_, err = w(fmt.Sprintf(`{"id":%d,"input":"evil\n"}`, id), "client-mallory")
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	h, _ := call(t, app, terminal.HistoryID, `{}`, alice)
	if e := h["entries"].([]any)[0].(map[string]any); e["status"] != "running" || e["background"] != true || e["exit_code"] != nil {
		t.Fatalf("history of a running command: %v", e)
	}
	if _, err := w(fmt.Sprintf(`{"id":%d,"input":"bye","close":true}`, id), alice); err != nil {
		t.Fatal(err)
	}
	final := eventually(t, app, id, func(o map[string]any) bool { return o["status"] != "running" })
	if final["status"] != "success" || num(t, final["exit_code"]) != 0 || final["stdout"] != "first\nhello\nbye" {
		t.Fatalf("ended: %v", final)
	}
	_, err = w(fmt.Sprintf(`{"id":%d,"input":"late"}`, id), alice)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
	// A foreground command has no session to write to.
	fg := num(t, run(t, app, cmd("true"))["id"])
	_, err = w(fmt.Sprintf(`{"id":%d,"input":"x"}`, fg), alice)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
}

func TestBackgroundInputClosed(t *testing.T) {
	app, _ := newApp(t)
	id := num(t, run(t, app, `{"command":"sleep 60","background":true}`)["id"])
	if _, err := call(t, app, terminal.WriteInputID, fmt.Sprintf(`{"id":%d,"close":true}`, id), alice); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, app, terminal.WriteInputID, fmt.Sprintf(`{"id":%d,"input":"x"}`, id), alice)
	wantCode(t, err, sdk.CodeInvalidParams, "id")
}

// A write to a command that does not read blocks no longer than the call's deadline.
func TestWriteInputTimeout(t *testing.T) {
	app, _ := newApp(t)
	id := num(t, run(t, app, `{"command":"sleep 60","background":true}`)["id"])
	chunk := fmt.Sprintf(`{"id":%d,"input":"%s"}`, id, strings.Repeat("x", terminal.MaxStdinBytes))
	var err error
	for i := 0; i < 16 && err == nil; i++ { // a pipe holds 64 KiB by default, up to 1 MiB
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err = callCtx(t, ctx, app, terminal.WriteInputID, chunk, alice)
		cancel()
	}
	wantCode(t, err, sdk.CodeTimeout, "")
}

// A background command past its timeout is killed with what it started. The timeout leaves
// a sandbox time to start and the shell to print its child's pid on a loaded machine (a
// sandbox starts in 10-20 ms when quiet, and took over 300 ms once beside a full test run).
func TestBackgroundTimeout(t *testing.T) {
	app, _ := newApp(t)
	m := sleeper()
	out := run(t, app, `{"command":"sh -c 'sleep `+m+` & echo $!; wait'","background":true,"timeout":1500}`)
	final := eventually(t, app, num(t, out["id"]), func(o map[string]any) bool { return o["status"] != "running" })
	if final["status"] != "timeout" || final["exit_code"] != nil {
		t.Fatalf("%v", final)
	}
	started(t, final["stdout"].(string))
	waitNoSleepers(t, m)
}

func TestSessionsBoundedAndClosed(t *testing.T) {
	app, _ := newApp(t)
	m := sleeper()
	var ids []int64
	for i := 0; i < terminal.MaxSessions; i++ {
		out := run(t, app, `{"command":"sh -c 'echo $$; exec sleep `+m+`'","background":true}`)
		id := num(t, out["id"])
		ids = append(ids, id)
	}
	waitSleepers(t, m, terminal.MaxSessions)
	_, err := call(t, app, terminal.ExecuteID, `{"command":"true","background":true}`, alice)
	if e := wantCode(t, err, sdk.CodeExecutionFailed, ""); !e.Recoverable {
		t.Fatal("a full session table is not recoverable")
	}
	// Foreground commands still run.
	run(t, app, cmd("true"))
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(sleepers(m)); n > 0 {
		t.Fatalf("%d processes outlived Close", n)
	}
	for _, id := range ids {
		out, _ := call(t, app, terminal.ReadOutputID, fmt.Sprintf(`{"id":%d}`, id), alice)
		if out["status"] != "cancelled" {
			t.Fatalf("after Close: %v", out)
		}
	}
	_, err = call(t, app, terminal.ExecuteID, cmd("true"), alice)
	wantCode(t, err, sdk.CodeExecutionFailed, "")
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
}

// Close ends a foreground command too, and the call says so.
func TestCloseEndsForeground(t *testing.T) {
	app, _ := newApp(t)
	done := make(chan error)
	go func() {
		_, err := call(t, app, terminal.ExecuteID, cmd("sleep 60"), alice)
		done <- err
	}()
	for {
		out, _ := call(t, app, terminal.HistoryID, `{}`, alice)
		if num(t, out["total"]) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	app.Close()
	select {
	case err := <-done:
		wantCode(t, err, sdk.CodeExecutionFailed, "")
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the command")
	}
}

func TestConcurrentCommands(t *testing.T) {
	app, _ := newApp(t)
	const n = terminal.MaxRunning
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := "client-" + strconv.Itoa(i%4)
			word := fmt.Sprintf("w%d", i)
			out, err := call(t, app, terminal.ExecuteID, fmt.Sprintf(`{"command":"sh -c 'sleep 0.1; echo %s; echo %s >&2'","stdin":"%s"}`, word, word, word), client)
			if err != nil {
				errs <- err
				return
			}
			if out["stdout"] != word+"\n" || out["stderr"] != word+"\n" {
				errs <- fmt.Errorf("command %d got %v", i, out)
				return
			}
			r, err := call(t, app, terminal.ReadOutputID, fmt.Sprintf(`{"id":%d}`, num(t, out["id"])), client)
			if err != nil || r["stdout"] != word+"\n" {
				errs <- fmt.Errorf("read_output %d: %v %v", i, r, err)
			}
			if _, err := call(t, app, terminal.HistoryID, `{}`, client); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := 0
	for c := 0; c < 4; c++ {
		out, _ := call(t, app, terminal.HistoryID, `{}`, "client-"+strconv.Itoa(c))
		total += int(num(t, out["total"]))
	}
	if total != n {
		t.Fatalf("%d commands in the histories, want %d", total, n)
	}
}

// One more foreground command than MaxRunning is refused, not queued.
func TestRunningBounded(t *testing.T) {
	app, _ := newApp(t)
	var wg sync.WaitGroup
	for i := 0; i < terminal.MaxRunning; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(t, app, terminal.ExecuteID, `{"command":"sleep 60","timeout":60000}`, alice)
		}()
	}
	defer func() { app.Close(); wg.Wait() }()
	for {
		out, _ := call(t, app, terminal.HistoryID, `{"count":100}`, alice)
		if num(t, out["total"]) == terminal.MaxRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err := call(t, app, terminal.ExecuteID, cmd("true"), alice)
	if e := wantCode(t, err, sdk.CodeExecutionFailed, ""); !e.Recoverable {
		t.Fatal("a full table is not recoverable")
	}
}
