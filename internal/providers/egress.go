package providers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/sandbox"
	"github.com/capgate/capgate/manifest"
)

// Egress is the network the provider processes have: capgate's egress proxy, served on a unix
// socket of each process's own (bound into its sandbox, where its init forwards the sandbox's
// 127.0.0.1:sandbox.ProxyPort to it). Each call is opened on the proxy with its capability's
// network_intents and its own credential, so that every connection is one call's; the attempts
// the proxy refuses are counted per call, so that a call whose capability declares no network
// intent, or a dry run, that tried to connect fails as one reporting an effect above its
// declaration does.
type Egress struct {
	// Proxy is the proxy; its OnRefusal must call Egress.Refused (NewEgress wires it).
	Proxy *egress.Proxy
	// Dir is the folder the processes' sockets are made in.
	Dir string

	mu      sync.Mutex
	refused map[string]int // attempts refused, by open call id
}

// NewEgress makes the proxy with o, its refusals counted per call before o.OnRefusal hears of
// them, its processes' sockets in dir.
func NewEgress(o egress.Options, dir string) (*Egress, error) {
	e := &Egress{Dir: dir, refused: map[string]int{}}
	then := o.OnRefusal
	o.OnRefusal = func(call egress.Call, dest, rule string) {
		e.mu.Lock()
		if _, open := e.refused[call.CallID]; open {
			e.refused[call.CallID]++
		}
		e.mu.Unlock()
		if then != nil {
			then(call, dest, rule)
		}
	}
	p, err := egress.New(&o)
	if err != nil {
		return nil, err
	}
	e.Proxy = p
	return e, nil
}

// listen makes the socket of one process and serves the proxy on it until the returned stop.
func (e *Egress) listen() (path string, stop func(), err error) {
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(e.Dir, "p")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "egress.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	go e.Proxy.Serve(ln)
	return path, func() {
		ln.Close()
		os.RemoveAll(dir)
	}, nil
}

// open opens the call of capability c on the proxy: the URL the provider reaches the proxy at
// from inside its sandbox, and the function that ends the call, saying whether it broke its
// declaration's network rule (it tried to connect, or connected, while its capability declares
// no network intent, or in a dry run).
func (e *Egress) open(appID string, c *manifest.Capability, callID string, dryRun bool) (string, func() error, error) {
	if callID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		callID = "provider_" + hex.EncodeToString(b[:])
	}
	call := egress.Call{AppID: appID, CapabilityID: c.ID, CallID: callID, DryRun: dryRun, Credentials: c.CredentialIntents}
	for _, n := range c.NetworkIntents {
		hp, err := egress.NewHostPort(n.Host, n.Port)
		if err != nil {
			continue // refused at install; never a destination
		}
		call.Destinations = append(call.Destinations, hp)
	}
	cred, done, err := e.Proxy.Open(call)
	if err != nil {
		return "", nil, err
	}
	e.mu.Lock()
	e.refused[callID] = 0
	e.mu.Unlock()
	u := url.URL{Scheme: "http", User: url.UserPassword(egress.ProxyUser, cred), Host: "127.0.0.1:" + strconv.Itoa(sandbox.ProxyPort)}
	return u.String(), func() error {
		conns := done()
		e.mu.Lock()
		tried := e.refused[callID]
		delete(e.refused, callID)
		e.mu.Unlock()
		switch {
		case dryRun && (tried > 0 || len(conns) > 0):
			return errors.New("the provider tried to reach the network in a dry run")
		case len(c.NetworkIntents) == 0 && (tried > 0 || len(conns) > 0):
			return fmt.Errorf("the provider tried to reach the network, and its capability declares no network intent")
		}
		return nil
	}, nil
}

// handle mints a credential handle for the open call callID's intent.
func (e *Egress) handle(ctx context.Context, appID string, c *manifest.Capability, callID, intent string) (string, error) {
	call := egress.Call{AppID: appID, CapabilityID: c.ID, CallID: callID, Credentials: c.CredentialIntents}
	return e.Proxy.Handle(call, intent)
}

// Session opens a long-lived network for one process that is not called per capability (a
// stdio tool server): a socket of its own, and one open call of the proxy reaching only allow,
// attributed to the app appID, until end.
func (e *Egress) Session(appID string, allow []egress.HostPort) (string, *url.Userinfo, func(), error) {
	path, stop, err := e.listen()
	if err != nil {
		return "", nil, nil, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	call := egress.Call{AppID: appID, CapabilityID: appID, CallID: "session_" + hex.EncodeToString(b[:]), Destinations: allow}
	cred, done, err := e.Proxy.Open(call)
	if err != nil {
		stop()
		return "", nil, nil, err
	}
	return path, url.UserPassword(egress.ProxyUser, cred), func() {
		done()
		stop()
	}, nil
}
