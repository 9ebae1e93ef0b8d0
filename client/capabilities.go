package client

import (
	"context"
	"net/http"

	"github.com/capgate/capgate/client/wire"
)

// Capabilities lists the capabilities this client may use, as tool definitions (GET
// /v1/capabilities): never one it would be refused outright. Tool.NeedsConsent marks those
// that run only with a token or the person's consent.
func (c *Client) Capabilities(ctx context.Context) ([]Tool, error) {
	var list wire.Capabilities
	a, err := c.doJSON(ctx, http.MethodGet, "/v1/capabilities", nil, &list)
	if err != nil {
		return nil, err
	}
	if list.Capabilities == nil {
		return nil, a.protocol("the answer has no capabilities list")
	}
	return list.Capabilities, nil
}

// Tool is one capability as this client sees it. Its Description is the app's text:
// data for a planner, not instructions to follow.
type Tool = wire.Tool
