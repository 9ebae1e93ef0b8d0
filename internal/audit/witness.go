package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/capgate/capgate/internal/store"
)

// Witness keeps the latest checkpoint of the log somewhere else than the store and its data
// folder: another folder (another disk, another machine's mount) or an HTTP service run by
// someone else. Someone who can rewrite the store and the head file beside it can cut the
// log's tail from both; a witness they cannot write still holds the highest checkpoint it
// was given, and Verify compares the store with it.
//
// A witness keeps the highest seq it was given and refuses a lower one, so that it never
// goes back; it does not check that a later checkpoint extends an earlier one (it holds no
// log), so it is as strong as the secrecy of the gateway's key. Implementations are safe for
// concurrent use.
type Witness interface {
	// Submit hands the witness a checkpoint signed by the gateway's key. nil means it holds
	// c now (or held it already). An error wrapping ErrWitnessLower means it holds a higher
	// one, which another writer of the same log gave it first, and kept that; one wrapping
	// ErrHeadFork means it holds another checkpoint at the same seq.
	Submit(ctx context.Context, c store.Checkpoint) error
	// Latest returns the highest checkpoint the witness holds, checked statically (its
	// signature is the caller's to verify); ok is false when it holds none yet.
	Latest(ctx context.Context) (c store.Checkpoint, ok bool, err error)
	// String names the witness in reports and logs: its folder or its URL.
	String() string
}

// ErrWitnessLower is a checkpoint a witness refused because it holds a higher one.
var ErrWitnessLower = errors.New("audit: the witness holds a higher checkpoint")

// ParseWitness reads a witness as the configuration names it: an absolute folder path, whose
// WitnessFile the gateway keeps, or an http:// or https:// URL of a service that speaks
// the protocol of WitnessHandler. Anything else is an error that says which forms are
// accepted.
func ParseWitness(spec string) (Witness, error) {
	switch {
	case strings.HasPrefix(spec, "http://"), strings.HasPrefix(spec, "https://"):
		u, err := url.Parse(spec)
		if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
			return nil, errors.New("audit: witness: an http(s) URL must have a host, and no user or fragment")
		}
		return &HTTPWitness{URL: u.String()}, nil
	case filepath.IsAbs(spec):
		return &FolderWitness{Dir: filepath.Clean(spec)}, nil
	}
	return nil, errors.New("audit: witness: must be an absolute folder path or an http(s) URL")
}

// WitnessFile is the file a folder witness keeps in its folder: a head file (HeadFile) whose
// head is the highest checkpoint it was given.
const WitnessFile = "audit.witness"

// FolderWitness keeps the highest checkpoint in Dir/WitnessFile, a head file advanced under
// its lock like the data folder's own, so that several replicas may share it. Dir must exist:
// a witness on a disk that is not mounted is an error, never a new folder on another disk,
// and never "holds nothing yet".
type FolderWitness struct {
	Dir string

	mu sync.Mutex
	hf *HeadFile
}

var _ Witness = (*FolderWitness)(nil)

func (w *FolderWitness) String() string { return w.Dir }

func (w *FolderWitness) file() *HeadFile {
	if w.hf == nil {
		w.hf = NewHeadFile(filepath.Join(w.Dir, WitnessFile))
	}
	return w.hf
}

// Submit advances the witness file to c.
func (w *FolderWitness) Submit(_ context.Context, c store.Checkpoint) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.present(); err != nil {
		return err
	}
	_, err := submitToHead(w.file(), c)
	return err
}

// present checks that the witness's folder is there.
func (w *FolderWitness) present() error {
	fi, err := os.Stat(w.Dir)
	if err == nil && !fi.IsDir() {
		err = errors.New("not a folder")
	}
	if err != nil {
		return fmt.Errorf("audit: witness folder %s: %w", w.Dir, err)
	}
	return nil
}

// submitToHead advances a witness's head file to the checkpoint c: refused when lower, and
// when another checkpoint holds its seq. It returns the head held before.
func submitToHead(hf *HeadFile, c store.Checkpoint) (Head, error) {
	if _, err := checkpointFromBody(c.Body); err != nil {
		return Head{}, err
	}
	cur, err := hf.Advance(Head{Seq: c.Seq, Hash: c.Head, Checkpoint: c}, nil)
	if err != nil {
		return cur, err
	}
	if cur.Checkpoint.Seq > c.Seq {
		return cur, fmt.Errorf("%w (seq %d)", ErrWitnessLower, cur.Checkpoint.Seq)
	}
	return cur, nil
}

// Latest reads the witness file; a missing file (in a folder that is there) holds nothing.
func (w *FolderWitness) Latest(context.Context) (store.Checkpoint, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.present(); err != nil {
		return store.Checkpoint{}, false, err
	}
	content, err := w.file().Read()
	if errors.Is(err, fs.ErrNotExist) {
		return store.Checkpoint{}, false, nil
	}
	if err != nil {
		return store.Checkpoint{}, false, err
	}
	c := content.Head.Checkpoint
	return c, c.Seq != 0, nil
}

// Close closes the witness file if it is open.
func (w *FolderWitness) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hf == nil {
		return nil
	}
	return w.hf.Close()
}

// HTTPWitness is a witness service at URL (WitnessHandler's protocol). Client is the HTTP
// client; nil means one with a DefaultWitnessTimeout timeout.
type HTTPWitness struct {
	URL    string
	Client *http.Client
}

var _ Witness = (*HTTPWitness)(nil)

func (w *HTTPWitness) String() string { return w.URL }

func (w *HTTPWitness) client() *http.Client {
	if w.Client != nil {
		return w.Client
	}
	return &http.Client{Timeout: DefaultWitnessTimeout}
}

// witnessAnswer is the JSON a witness answers a POST with.
type witnessAnswer struct {
	Seq   int64  `json:"seq"`             // the seq of the checkpoint it holds now
	Error string `json:"error,omitempty"` // "lower", "fork", or what was wrong with the request
}

// Submit posts c's body to the witness.
func (w *HTTPWitness) Submit(ctx context.Context, c store.Checkpoint) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(c.Body))
	if err != nil {
		return fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client().Do(req)
	if err != nil {
		return fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	var a witnessAnswer
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxWitnessAnswerBytes)).Decode(&a)
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusConflict && a.Error == "lower":
		return fmt.Errorf("%w (seq %d)", ErrWitnessLower, a.Seq)
	case resp.StatusCode == http.StatusConflict && a.Error == "fork":
		return fmt.Errorf("%w: the witness %s holds another checkpoint at seq %d", ErrHeadFork, w.URL, a.Seq)
	}
	return fmt.Errorf("audit: witness %s answered %s", w.URL, resp.Status)
}

// Latest gets the checkpoint the witness holds.
func (w *HTTPWitness) Latest(ctx context.Context) (store.Checkpoint, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URL, nil)
	if err != nil {
		return store.Checkpoint{}, false, fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	resp, err := w.client().Do(req)
	if err != nil {
		return store.Checkpoint{}, false, fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		return store.Checkpoint{}, false, nil
	case http.StatusOK:
	default:
		return store.Checkpoint{}, false, fmt.Errorf("audit: witness %s answered %s", w.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCheckpointBytes+1))
	if err != nil {
		return store.Checkpoint{}, false, fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	c, err := checkpointFromBody(body)
	if err != nil {
		return store.Checkpoint{}, false, fmt.Errorf("audit: witness %s: %w", w.URL, err)
	}
	return c, true, nil
}

// WitnessHandler is a witness service for the log whose checkpoints pub verifies, keeping
// the highest it was given in dir/WitnessFile (`capgate audit witness` serves it). Its
// protocol, at any path:
//
//	POST, body a signed checkpoint (the canonical JSON SignCheckpoint makes, at most 4 KiB):
//	  200 {"seq":N}                 it holds this checkpoint now, or held it already
//	  409 {"seq":M,"error":"lower"} it holds the higher checkpoint M and kept it
//	  409 {"seq":N,"error":"fork"}  it holds another checkpoint at the same seq
//	  400 {"error":"…"}             not a checkpoint, or not signed by pub
//	GET: 200 and the body of the highest checkpoint held, or 404 when it holds none.
//
// Anyone may post: a checkpoint that pub does not verify is refused, and an old one cannot
// move the witness back. What it holds is not secret (a seq, a hash and a time).
func WitnessHandler(pub ed25519.PublicKey, dir string) http.Handler {
	return &witnessHandler{pub: pub, hf: NewHeadFile(filepath.Join(dir, WitnessFile))}
}

type witnessHandler struct {
	pub ed25519.PublicKey
	mu  sync.Mutex // one HeadFile, one request at a time (the file lock covers other processes)
	hf  *HeadFile
}

func (h *witnessHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer := func(code int, a witnessAnswer) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(a)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.mu.Lock()
		content, err := h.hf.Read()
		h.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) || err == nil && content.Head.Checkpoint.Seq == 0 {
			http.Error(w, "no checkpoint yet", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, "the witness cannot read its file", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(content.Head.Checkpoint.Body)
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCheckpointBytes))
		if err != nil {
			answer(http.StatusRequestEntityTooLarge, witnessAnswer{Error: "body larger than " + strconv.Itoa(maxCheckpointBytes) + " bytes"})
			return
		}
		c, err := checkpointFromBody(body)
		if err == nil {
			err = VerifyCheckpoint(h.pub, c)
		}
		if err != nil {
			answer(http.StatusBadRequest, witnessAnswer{Error: ruleOf(err, ErrBadCheckpoint)})
			return
		}
		h.mu.Lock()
		cur, err := submitToHead(h.hf, c)
		h.mu.Unlock()
		switch {
		case err == nil:
			answer(http.StatusOK, witnessAnswer{Seq: c.Seq})
		case errors.Is(err, ErrWitnessLower):
			answer(http.StatusConflict, witnessAnswer{Seq: cur.Checkpoint.Seq, Error: "lower"})
		case errors.Is(err, ErrHeadFork):
			answer(http.StatusConflict, witnessAnswer{Seq: c.Seq, Error: "fork"})
		default:
			answer(http.StatusInternalServerError, witnessAnswer{Error: "the witness cannot write its file"})
		}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
