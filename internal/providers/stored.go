package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Program is how an app that runs out of process is started: an absolute path, its
// arguments, the digest of the program's content when it was registered (a program changed
// since is not run), and the folder it needs besides (its scripts, libraries, data), bound
// read-only in its sandbox as its working folder.
type Program struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Digest  string   `json:"digest"`
	Dir     string   `json:"dir,omitempty"`
	// Plugin marks the program of a plugin installed under the lockfile: the lockfile, not
	// capgate app register, decides whether it runs.
	Plugin bool `json:"plugin,omitempty"`
}

// The limits of a Program.
const (
	MaxArgs     = 64
	MaxArgBytes = 4096
)

// Check says what is wrong with p, naming the field and the rule.
func (p Program) Check() error {
	switch {
	case !filepath.IsAbs(p.Command) || filepath.Clean(p.Command) != p.Command:
		return errors.New("command: must be a clean absolute path")
	case len(p.Command) > MaxArgBytes:
		return fmt.Errorf("command: longer than %d bytes", MaxArgBytes)
	case len(p.Args) > MaxArgs:
		return fmt.Errorf("args: more than %d", MaxArgs)
	case p.Dir != "" && (!filepath.IsAbs(p.Dir) || filepath.Clean(p.Dir) != p.Dir || p.Dir == "/"):
		return errors.New("dir: must be a clean absolute path other than /")
	case len(p.Dir) > MaxArgBytes:
		return fmt.Errorf("dir: longer than %d bytes", MaxArgBytes)
	case !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != len("sha256:")+64:
		return errors.New("digest: must be sha256: and 64 hex digits")
	}
	for i, a := range p.Args {
		if len(a) > MaxArgBytes || strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("args[%d]: at most %d bytes, no NUL", i, MaxArgBytes)
		}
	}
	return nil
}

// stateKey is where an app's Program is kept in the store's state of the app.
const stateKey = "provider.program"

// SaveProgram records how the app appID is started.
func SaveProgram(ctx context.Context, st store.State, appID string, p Program) error {
	if err := p.Check(); err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return st.PutState(ctx, appID, stateKey, raw)
}

// LoadProgram returns how the app appID is started: store.ErrNotFound for an app that runs in
// capgate or not at all.
func LoadProgram(ctx context.Context, st store.State, appID string) (Program, error) {
	raw, err := st.GetState(ctx, appID, stateKey)
	if err != nil {
		return Program{}, err
	}
	var p Program
	if err := json.Unmarshal(raw, &p); err != nil {
		return Program{}, fmt.Errorf("providers: %s: the stored program does not parse: %w", appID, err)
	}
	if err := p.Check(); err != nil {
		return Program{}, fmt.Errorf("providers: %s: the stored program: %w", appID, err)
	}
	return p, nil
}

// Store is what the stored programs are read from.
type Store interface {
	store.Apps
	store.State
}

// ListPrograms returns the Program of every registered app that runs out of process, by app id.
func ListPrograms(ctx context.Context, st Store) (map[string]Program, error) {
	apps, err := st.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]Program{}
	for _, a := range apps {
		p, err := LoadProgram(ctx, st, a.AppID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[a.AppID] = p
	}
	return out, nil
}

// Status is whether an app's provider is working, as the gateway last saw it, and why not:
// for the command line and the approval page, which do not share the gateway's memory.
type Status struct {
	Working bool      `json:"working"`
	Why     string    `json:"why,omitempty"`
	At      time.Time `json:"at"`
}

// statusKey is where an app's Status is kept in the store's state of the app.
const statusKey = "provider.status"

// MaxWhyBytes bounds the why of a Status: a sentence, never a provider's whole output.
const MaxWhyBytes = 1024

// SaveStatus records the status of the app appID's provider.
func SaveStatus(ctx context.Context, st store.State, appID string, s Status) error {
	if len(s.Why) > MaxWhyBytes {
		s.Why = s.Why[:MaxWhyBytes]
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return st.PutState(ctx, appID, statusKey, raw)
}

// LoadStatus returns the status of the app appID's provider: store.ErrNotFound when no
// gateway has run it.
func LoadStatus(ctx context.Context, st store.State, appID string) (Status, error) {
	raw, err := st.GetState(ctx, appID, statusKey)
	if err != nil {
		return Status{}, err
	}
	var s Status
	if err := json.Unmarshal(raw, &s); err != nil {
		return Status{}, fmt.Errorf("providers: %s: the stored status does not parse: %w", appID, err)
	}
	return s, nil
}

// DeleteProgram forgets how the app appID is started, and its status.
func DeleteProgram(ctx context.Context, st store.State, appID string) error {
	return errors.Join(st.PutState(ctx, appID, stateKey, nil), st.PutState(ctx, appID, statusKey, nil))
}
