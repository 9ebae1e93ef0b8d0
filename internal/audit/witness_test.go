package audit

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startWitness serves WitnessHandler on a loopback port of its own, as `capgate audit
// witness` does, and returns its URL.
func startWitness(t *testing.T, dir string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: WitnessHandler(pubOf(testKey()), dir), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/witness"
}

func TestParseWitness(t *testing.T) {
	for spec, want := range map[string]string{
		"https://witness.example/capgate": "*audit.HTTPWitness",
		"http://127.0.0.1:9/w":            "*audit.HTTPWitness",
		"/srv/other-disk/capgate":         "*audit.FolderWitness",
	} {
		w, err := ParseWitness(spec)
		if err != nil || typeName(w) != want || w.String() != filepath.Clean(spec) && w.String() != spec {
			t.Errorf("%s: %T %v", spec, w, err)
		}
	}
	for _, bad := range []string{"", "relative/dir", "ftp://x/y", "https://", "https://user:pw@host/x", "https://host/x#frag"} {
		if _, err := ParseWitness(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("%q: the error shows the password: %v", bad, err)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *HTTPWitness:
		return "*audit.HTTPWitness"
	case *FolderWitness:
		return "*audit.FolderWitness"
	}
	return "?"
}

// TestWitnesses runs both kinds of witness: a folder and a real HTTP witness on loopback.
func TestWitnesses(t *testing.T) {
	kinds := map[string]func(t *testing.T) Witness{
		"folder": func(t *testing.T) Witness { return &FolderWitness{Dir: t.TempDir()} },
		"http":   func(t *testing.T) Witness { return &HTTPWitness{URL: startWitness(t, t.TempDir())} },
	}
	for name, newWitness := range kinds {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			wit := newWitness(t)
			if _, ok, err := wit.Latest(ctx); ok || err != nil {
				t.Fatalf("a new witness holds something: %v %v", ok, err)
			}
			c5 := SignCheckpoint(testKey(), 5, hashOf(5), testTime)
			c9 := SignCheckpoint(testKey(), 9, hashOf(9), testTime)
			if err := wit.Submit(ctx, c5); err != nil {
				t.Fatal(err)
			}
			if err := wit.Submit(ctx, c5); err != nil {
				t.Fatalf("the same checkpoint again: %v", err)
			}
			if err := wit.Submit(ctx, c9); err != nil {
				t.Fatal(err)
			}
			if err := wit.Submit(ctx, c5); !errors.Is(err, ErrWitnessLower) {
				t.Fatalf("a lower checkpoint: %v", err)
			}
			if err := wit.Submit(ctx, SignCheckpoint(testKey(), 9, hashOf(8), testTime)); !errors.Is(err, ErrHeadFork) {
				t.Fatalf("another checkpoint at the same seq: %v", err)
			}
			got, ok, err := wit.Latest(ctx)
			if err != nil || !ok || !bytes.Equal(got.Body, c9.Body) || got.Seq != 9 || got.Head != hashOf(9) {
				t.Fatalf("latest: %+v %v %v", got, ok, err)
			}
		})
	}
}

// TestHTTPWitnessRefuses checks what the HTTP witness refuses: checkpoints another key
// signed, bodies that are not checkpoints, large bodies and other methods.
func TestHTTPWitnessRefuses(t *testing.T) {
	url := startWitness(t, t.TempDir())
	wit := &HTTPWitness{URL: url}
	ctx := context.Background()
	if err := wit.Submit(ctx, SignCheckpoint(otherKey(), 50, hashOf(50), testTime)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a checkpoint by another key: %v", err)
	}
	for name, body := range map[string]string{
		"not JSON":  "x",
		"respelled": strings.Replace(string(SignCheckpoint(testKey(), 5, hashOf(5), testTime).Body), `"seq":5`, `"seq":5.0`, 1),
		"too large": strings.Repeat(" ", maxCheckpointBytes+1),
	} {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %s", name, resp.Status)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %s", resp.Status)
	}
	if _, ok, _ := wit.Latest(ctx); ok {
		t.Fatal("the witness took a refused checkpoint")
	}
}

// TestWriterWitnessAndVerify is the witness end to end: a writer sends its checkpoints to an
// HTTP witness on loopback; the store's tail and the head file are then cut together (all an
// attacker with the data folder can reach), and VerifyWith still reports the cut from the
// witness. A witness that cannot be reached is a problem, not a pass.
func TestWriterWitnessAndVerify(t *testing.T) {
	dir := t.TempDir()
	b := sqliteBackend(t, dir)
	url := startWitness(t, t.TempDir())
	folder := &FolderWitness{Dir: t.TempDir()}
	witnesses := []Witness{&HTTPWitness{URL: url}, folder}
	headPath := filepath.Join(dir, "audit.head")
	w := NewWriter(b.st, &Options{CheckpointKey: testKey(), CheckpointEvery: 10, HeadPath: headPath, Witnesses: witnesses, Logger: quietLogger()})
	appendN(t, w, 23)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.WitnessErrors != 0 || st.HeadErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, wit := range witnesses {
		if c, ok, err := wit.Latest(context.Background()); err != nil || !ok || c.Seq != 23 {
			t.Fatalf("%s holds %+v %v %v", wit, c, ok, err)
		}
	}
	pub := pubOf(testKey())
	opts := &VerifyOptions{HeadFile: headPath, Witnesses: witnesses}
	if rep, err := VerifyWith(t.Context(), b.st, pub, opts); err != nil || !rep.OK() || len(rep.Warnings) != 0 || len(rep.Compared) != 3 {
		t.Fatalf("intact: %+v %v", rep, err)
	}

	b.cutLog(t, 12)
	b.exec(t, `DELETE FROM audit_checkpoints WHERE seq > 10`)
	hf := NewHeadFile(headPath)
	// The attacker rewrites the head file too (a fresh one, at the cut log's head).
	if err := os.Remove(headPath); err != nil {
		t.Fatal(err)
	}
	es, _ := b.st.AuditRange(t.Context(), 12, 12, 1)
	if _, err := hf.Advance(Head{Seq: 12, Hash: es[0].Hash}, nil); err != nil {
		t.Fatal(err)
	}
	hf.Close()
	rep, err := VerifyWith(t.Context(), b.st, pub, opts)
	if err != nil || rep.OK() || !hasProblem(rep, 23, SourceWitness, "the log ends at seq 12 but the witness "+url+" holds a checkpoint at seq 23") {
		t.Fatalf("cut with the head file: %v %v", rep.Problems, err)
	}

	// A witness that does not answer, or a folder that is not there (a disk not mounted):
	// not a pass, and nothing is created in its place.
	gone := filepath.Join(t.TempDir(), "not-mounted")
	for _, wit := range []Witness{&HTTPWitness{URL: "http://127.0.0.1:1/none"}, &FolderWitness{Dir: gone}} {
		rep, _ = VerifyWith(t.Context(), b.st, pub, &VerifyOptions{Witnesses: []Witness{wit}})
		if rep.OK() || !hasProblem(rep, 0, SourceWitness, "could not be read") {
			t.Fatalf("%s: %v", wit, rep.Problems)
		}
	}
	if err := (&FolderWitness{Dir: gone}).Submit(t.Context(), SignCheckpoint(testKey(), 1, hashOf(1), testTime)); err == nil {
		t.Fatal("a checkpoint was given to a folder that is not there")
	}
	if _, err := os.Stat(gone); err == nil {
		t.Fatal("the missing witness folder was created")
	}
}
