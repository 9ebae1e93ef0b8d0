package files_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/apps/files"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// env is one app over a fresh root, with a sibling folder "outside" holding a secret that
// no call may read, change or remove.
type env struct {
	t       *testing.T
	doc     *manifest.Document
	app     *files.App
	root    string // as given to New
	state   string
	outside string
	secret  string // outside/secret
}

const secretText = "top secret, never to be read"

func loadDoc(t testing.TB, text string) *manifest.Document {
	t.Helper()
	doc, err := manifest.Load([]byte(text))
	if err != nil {
		t.Fatalf("manifest.Load: %v", err)
	}
	return doc
}

func newEnv(t *testing.T) *env {
	return newEnvWith(t, files.Manifest)
}

func newEnvWith(t *testing.T, manifestText string) *env {
	t.Helper()
	base := t.TempDir()
	e := &env{t: t, doc: loadDoc(t, manifestText), root: filepath.Join(base, "root"), state: filepath.Join(base, "state"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{e.root, e.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.secret = filepath.Join(e.outside, "secret")
	if err := os.WriteFile(e.secret, []byte(secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := files.New(e.doc, e.root, e.state)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.app = app
	t.Cleanup(func() {
		app.Close()
		e.checkSecret()
	})
	return e
}

// checkSecret fails the test when the outside folder changed.
func (e *env) checkSecret() {
	e.t.Helper()
	b, err := os.ReadFile(e.secret)
	if err != nil || string(b) != secretText {
		e.t.Errorf("the secret outside the root was changed or removed (err %v)", err)
	}
	ents, _ := os.ReadDir(e.outside)
	if len(ents) != 1 {
		e.t.Errorf("the outside folder holds %d entries, want 1", len(ents))
	}
}

func ic() sdk.InvocationContext {
	return sdk.InvocationContext{Source: sdk.SourceAgent, AppID: files.AppID, Timestamp: time.Now(), ClientID: "test"}
}

// call validates params as the gateway does, invokes, and checks a success against the
// capability's returns schema.
func (e *env) call(id, params string) (sdk.Result, error) {
	e.t.Helper()
	if err := sdk.DefaultValidateParams(e.doc, id, json.RawMessage(params)); err != nil {
		return sdk.Result{}, err
	}
	return e.invoke(context.Background(), id, params)
}

// invoke calls Invoke directly, without the gateway's validation.
func (e *env) invoke(ctx context.Context, id, params string) (sdk.Result, error) {
	e.t.Helper()
	res, err := e.app.Invoke(ctx, id, json.RawMessage(params), ic())
	if err != nil {
		var se *sdk.Error
		if !errors.As(err, &se) {
			e.t.Fatalf("%s: error %v is not an *sdk.Error", id, err)
		}
		return res, err
	}
	if !res.Success {
		e.t.Fatalf("%s: success false without an error", id)
	}
	if err := e.doc.ReturnsSchema(id).ValidateJSON(res.Data, ""); err != nil {
		e.t.Fatalf("%s: answer %s breaks the returns schema: %v", id, res.Data, err)
	}
	return res, nil
}

// ok calls and fails the test on an error, returning the decoded answer.
func (e *env) ok(id, params string) (map[string]any, string) {
	e.t.Helper()
	res, err := e.call(id, params)
	if err != nil {
		e.t.Fatalf("%s %s: %v", id, params, err)
	}
	var m map[string]any
	if err := json.Unmarshal(res.Data, &m); err != nil {
		e.t.Fatal(err)
	}
	return m, res.UndoToken
}

// fails calls and checks the error's code; it returns the error.
func (e *env) fails(id, params string, code sdk.Code) *sdk.Error {
	e.t.Helper()
	_, err := e.call(id, params)
	return e.checkErr(err, code, id+" "+abbrev(params))
}

func (e *env) checkErr(err error, code sdk.Code, what string) *sdk.Error {
	e.t.Helper()
	if err == nil {
		e.t.Fatalf("%s: succeeded, want %s", what, code)
	}
	var se *sdk.Error
	if !errors.As(err, &se) {
		e.t.Fatalf("%s: error %v is not an *sdk.Error", what, err)
	}
	if se.Code != code {
		e.t.Fatalf("%s: code %s (%v), want %s", what, se.Code, err, code)
	}
	// An error never names the host's folders.
	for _, s := range []string{e.root, e.outside, e.state} {
		if strings.Contains(err.Error(), s) || strings.Contains(se.Reason, s) {
			e.t.Fatalf("%s: error %q echoes a path", what, err)
		}
	}
	return se
}

func (e *env) undo(id, token string) error {
	e.t.Helper()
	return e.app.Undo(context.Background(), id, token, ic())
}

func (e *env) path(rel string) string { return filepath.Join(e.root, rel) }

func (e *env) writeFile(rel, content string, perm os.FileMode) {
	e.t.Helper()
	if err := os.WriteFile(e.path(rel), []byte(content), perm); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(e.path(rel), perm); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) readFile(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatalf("reading %s: %v", rel, err)
	}
	return string(b)
}

func (e *env) missing(rel string) {
	e.t.Helper()
	if _, err := os.Lstat(e.path(rel)); !errors.Is(err, os.ErrNotExist) {
		e.t.Fatalf("%s exists (err %v), want it missing", rel, err)
	}
}

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func abbrev(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
