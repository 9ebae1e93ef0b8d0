package toolserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capgate/capgate/internal/store"
)

// Store is what tool servers keep in the store: their apps, their per-app state (config,
// pins, pending pin requests) and the pin consent requests. store.Store satisfies it.
type Store interface {
	store.Apps
	store.State
	store.Consents
}

// Keys of a tool server's app state.
const (
	StateConfig  = "toolserver/config"   // the Config, JSON
	statePin     = "toolserver/pin/"     // + tool name: its Pin, JSON
	statePending = "toolserver/pending/" // + tool name: the open pin request, JSON
	// stateRevision is the MCP revision of the last connection, a Revision (JSON).
	stateRevision = "toolserver/revision"
)

// KindPin is the kind of consent request that asks the person to accept a tool server's
// changed or new tool (store.Consent.Kind).
const KindPin = "pin"

// LoadConfig returns the stored Config of the tool server name; ErrNotToolServer when there
// is none.
func LoadConfig(ctx context.Context, st store.State, name string) (Config, error) {
	raw, err := st.GetState(ctx, AppPrefix+name, StateConfig)
	if errors.Is(err, store.ErrNotFound) {
		return Config{}, fmt.Errorf("%w: %s", ErrNotToolServer, name)
	}
	if err != nil {
		return Config{}, fmt.Errorf("toolserver %s: config: %w", name, err)
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("toolserver %s: stored config does not parse: %w", name, err)
	}
	if c.Name != name {
		return Config{}, fmt.Errorf("toolserver %s: stored config names another server", name)
	}
	return c, nil
}

// ListConfigs returns the Config of every tool server whose app is registered, ordered by
// name. An app under mcp. without a stored config (registered by hand) is not a tool server.
func ListConfigs(ctx context.Context, st Store) ([]Config, error) {
	apps, err := st.ListApps(ctx)
	if err != nil {
		return nil, fmt.Errorf("toolserver: list apps: %w", err)
	}
	var out []Config
	for _, a := range apps {
		name, ok := NameOf(a.AppID)
		if !ok {
			continue
		}
		c, err := LoadConfig(ctx, st, name)
		if errors.Is(err, ErrNotToolServer) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// LoadPins returns the pins of the tool server name, ordered by tool name.
func LoadPins(ctx context.Context, st store.State, name string) ([]Pin, error) {
	m, err := st.ListState(ctx, AppPrefix+name, statePin)
	if err != nil {
		return nil, fmt.Errorf("toolserver %s: pins: %w", name, err)
	}
	pins := make([]Pin, 0, len(m))
	for k, raw := range m {
		var p Pin
		if err := json.Unmarshal(raw, &p); err != nil || p.Tool != strings.TrimPrefix(k, statePin) {
			return nil, fmt.Errorf("toolserver %s: a stored pin does not parse", name)
		}
		pins = append(pins, p)
	}
	slices.SortFunc(pins, func(a, b Pin) int { return strings.Compare(a.Tool, b.Tool) })
	return pins, nil
}

func putPin(ctx context.Context, st store.State, name string, p Pin) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return st.PutState(ctx, AppPrefix+name, statePin+p.Tool, raw)
}

func deletePin(ctx context.Context, st store.State, name, tool string) error {
	if err := st.PutState(ctx, AppPrefix+name, statePin+tool, nil); err != nil {
		return err
	}
	return st.PutState(ctx, AppPrefix+name, statePending+tool, nil)
}

// pending is an open pin request: the consent request asking to accept the tool with Hash.
type pending struct {
	Hash      string `json:"hash"`
	ConsentID string `json:"consent_id"`
}

func loadPending(ctx context.Context, st store.State, name string) (map[string]pending, error) {
	m, err := st.ListState(ctx, AppPrefix+name, statePending)
	if err != nil {
		return nil, fmt.Errorf("toolserver %s: pending requests: %w", name, err)
	}
	out := make(map[string]pending, len(m))
	for k, raw := range m {
		var p pending
		if json.Unmarshal(raw, &p) == nil {
			out[strings.TrimPrefix(k, statePending)] = p
		}
	}
	return out, nil
}

// PinRequest is a tool's open pin request: the consent request (ConsentID, of kind KindPin)
// that asked the person to accept the tool's changed or new definition, whose hash is Hash.
// It stays recorded after the person denies it (the tool stays stopped), and is dropped
// when the tool is accepted or removed.
type PinRequest struct {
	Tool      string
	Hash      string
	ConsentID string
}

// PinRequests returns the pin requests of the tool server name, ordered by tool name.
func PinRequests(ctx context.Context, st store.State, name string) ([]PinRequest, error) {
	m, err := loadPending(ctx, st, name)
	if err != nil {
		return nil, err
	}
	out := make([]PinRequest, 0, len(m))
	for tool, p := range m {
		out = append(out, PinRequest{Tool: tool, Hash: p.Hash, ConsentID: p.ConsentID})
	}
	slices.SortFunc(out, func(a, b PinRequest) int { return strings.Compare(a.Tool, b.Tool) })
	return out, nil
}

func putPending(ctx context.Context, st store.State, name, tool string, p pending) error {
	raw, _ := json.Marshal(p)
	return st.PutState(ctx, AppPrefix+name, statePending+tool, raw)
}

// forget deletes every state key of the tool server name.
func forget(ctx context.Context, st store.State, name string) error {
	m, err := st.ListState(ctx, AppPrefix+name, "toolserver/")
	if err != nil {
		return err
	}
	var errs []error
	for k := range m {
		errs = append(errs, st.PutState(ctx, AppPrefix+name, k, nil))
	}
	return errors.Join(errs...)
}

// newConsentID makes a consent request id of the form consent.ValidID accepts.
func newConsentID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}
