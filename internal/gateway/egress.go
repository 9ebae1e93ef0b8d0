package gateway

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/egress"
	"github.com/capgate/capgate/internal/intent"
	supervised "github.com/capgate/capgate/internal/providers"
)

// EgressDir is the folder of the data folder where the egress proxy's sockets are made, one
// per provider process, each bound into that provider's sandbox.
const EgressDir = "run/egress"

// openEgress makes the providers' network: the egress proxy, with the host policy's private
// destinations and the credential catalog cfg gives, every connection and refusal recorded in
// the audit log against its call.
func (g *Gateway) openEgress(cfg Config) (*supervised.Egress, error) {
	o := egress.Options{Resolver: cfg.Resolver, Host: intent.Host{AllowPrivate: cfg.AllowPrivate}, Credentials: cfg.Credentials, Logger: g.log,
		OnRefusal: func(call egress.Call, dest, rule string) {
			g.egressRecord(call, audit.DecisionDeny, "PERMISSION_DENIED", "refused", fmt.Sprintf("capgate's egress proxy refused the provider's connection to %s: %s", clipText(dest), rule))
		},
		OnConnect: func(call egress.Call, dest egress.HostPort, addr netip.AddrPort) {
			g.egressRecord(call, audit.DecisionAllow, "", "connected", fmt.Sprintf("the provider connected to %s (%s), a declared network intent, through capgate's egress proxy", dest, addr))
		}}
	e, err := supervised.NewEgress(o, filepath.Join(cfg.DataDir, EgressDir))
	if err != nil {
		return nil, fmt.Errorf("gateway: egress: %w", err)
	}
	return e, nil
}

// egressRecord records one connection or refusal of the call, as observed by capgate itself.
func (g *Gateway) egressRecord(call egress.Call, decision, code, result, why string) {
	if g.Audit == nil {
		return
	}
	r := audit.Record{Kind: audit.KindDecision, Decision: decision, Action: "egress.connect", App: call.AppID, Capability: call.CapabilityID,
		CallID: call.CallID, ClientID: "capgate", Code: code, Result: result, Explanation: why}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	if _, err := g.Audit.Append(ctx, r); err != nil {
		g.log.Warn("an egress connection could not be recorded", "app", call.AppID, "err", err)
	}
}

// clipText bounds untrusted text put in a record, keeping it valid UTF-8 (a cut may fall
// inside a character).
func clipText(s string) string {
	const max = 256
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
