package opsock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/capgate/capgate/internal/operator"
	"github.com/capgate/capgate/internal/providers"
	"github.com/capgate/capgate/internal/registry"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/internal/toolserver"
)

// Client asks the gateway on an operator socket for changes. Its methods are the
// operator.Service's of the same names, made by the gateway.
type Client struct {
	path string
	http *http.Client
}

// DialTimeout bounds connecting to the socket; a change itself may take as long as the
// gateway needs (adding a tool server connects to it).
const DialTimeout = 2 * time.Second

// Dial returns the client of the operator socket at path once a gateway answers there, else
// ErrNoGateway (no socket, or one left by a gateway that is gone).
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoGateway, err)
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		d.Timeout = DialTimeout
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{path: path, http: &http.Client{Transport: tr}}, nil
}

// ErrNoGateway is an operator socket no gateway answers.
var ErrNoGateway = errors.New("opsock: no gateway answers the operator socket")

// Close closes the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func (c *Client) do(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://operator"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		return fmt.Errorf("opsock: the gateway on %s: %w", c.path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxRequestBytes))
	if err != nil {
		return fmt.Errorf("opsock: the gateway's answer: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		var w wireError
		if json.Unmarshal(data, &w) != nil || w.Message == "" {
			return fmt.Errorf("opsock: the gateway answered %s", res.Status)
		}
		return w.err()
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("opsock: the gateway's answer: %w", err)
	}
	return nil
}

func by(a operator.Actor) actor { return actor{ID: a.ID, Who: a.Who, Where: a.Where} }

// RegisterApp is operator.Service.RegisterApp, made by the gateway (with its trusted keys).
// The app returned holds no document.
func (c *Client) RegisterApp(ctx context.Context, a operator.Actor, raw []byte, alias string) (registry.App, error) {
	var out app
	err := c.do(ctx, pathRegisterApp, registerApp{By: by(a), Manifest: raw, Alias: alias}, &out)
	return registry.App{ID: out.ID, Alias: out.Alias, Tier: out.Tier, Reason: out.Reason, Detail: out.Detail, Enabled: true}, err
}

// RegisterProvider is operator.Service.RegisterProvider, made by the gateway, which starts the
// program before it answers.
func (c *Client) RegisterProvider(ctx context.Context, a operator.Actor, raw []byte, alias string, prog providers.Program) (registry.App, error) {
	var out app
	err := c.do(ctx, pathRegisterApp, registerApp{By: by(a), Manifest: raw, Alias: alias, Program: &prog}, &out)
	return registry.App{ID: out.ID, Alias: out.Alias, Tier: out.Tier, Reason: out.Reason, Detail: out.Detail, Enabled: true}, err
}

// AddClient is operator.Service.AddClient, made by the gateway. The client returned holds no
// key hash.
func (c *Client) AddClient(ctx context.Context, a operator.Actor, n operator.NewClient) (string, store.Client, error) {
	var out addedClient
	err := c.do(ctx, pathAddClient, addClient{By: by(a), Name: n.Name, Trust: n.Trust, NeverAsk: n.NeverAsk,
		RequireToken: n.RequireToken, UnixUID: n.UnixUID, Assistant: n.Assistant}, &out)
	return out.Key, out.Client, err
}

// ChangeClient is operator.Service.ChangeClient, made by the gateway.
func (c *Client) ChangeClient(ctx context.Context, a operator.Actor, ref string, action operator.ClientAction) (store.Client, error) {
	var out addedClient
	err := c.do(ctx, pathChangeClient, changeClient{By: by(a), Ref: ref, Action: action}, &out)
	return out.Client, err
}

// AddToolServer is operator.Service.AddToolServer, made by the gateway, which starts the
// server's connection at once.
func (c *Client) AddToolServer(ctx context.Context, a operator.Actor, cfg toolserver.Config) (toolserver.Report, error) {
	var out reported
	err := c.do(ctx, pathAddTool, addTool{By: by(a), Config: cfg}, &out)
	return out.Report, err
}

// RemoveToolServer is operator.Service.RemoveToolServer, made by the gateway, which stops the
// server at once.
func (c *Client) RemoveToolServer(ctx context.Context, a operator.Actor, name string) error {
	return c.do(ctx, pathRemoveTool, removeTool{By: by(a), Name: name}, &struct{}{})
}

// AcceptTools is operator.Service.AcceptTools, made by the gateway. The report comes with an
// error too: it shows how the tools differ even when nothing was accepted.
func (c *Client) AcceptTools(ctx context.Context, a operator.Actor, name string, tools []string, dryRun bool) (toolserver.Report, error) {
	var out reported
	if err := c.do(ctx, pathAcceptTools, acceptTools{By: by(a), Name: name, Tools: tools, DryRun: dryRun}, &out); err != nil {
		return toolserver.Report{}, err
	}
	return out.Report, out.Error.err()
}

// Revoke is operator.Service.Revoke, made by the gateway.
func (c *Client) Revoke(ctx context.Context, a operator.Actor, id string) error {
	return c.do(ctx, pathRevoke, revoke{By: by(a), ID: id}, &struct{}{})
}

// Answer is operator.Service.Answer, made by the gateway.
func (c *Client) Answer(ctx context.Context, a operator.Actor, id string, verb operator.Verb, remember bool) error {
	return c.do(ctx, pathAnswer, answer{By: by(a), ID: id, Verb: verb, Remember: remember}, &struct{}{})
}
