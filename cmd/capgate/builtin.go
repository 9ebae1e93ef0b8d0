package main

import (
	"crypto/ed25519"

	"github.com/capgate/capgate/sdk"
)

// manifestPub is the gateway key's public half as audit.Verify takes it.
type manifestPub = ed25519.PublicKey

// builtinHandlers are the in-process apps compiled into this binary. The app fleet (terminal,
// files, settings, ...) registers here when it lands.
func builtinHandlers() map[string]sdk.Handler { return map[string]sdk.Handler{} }
