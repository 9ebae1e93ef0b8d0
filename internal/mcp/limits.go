package mcp

import "time"

const (
	// MaxToolNameBytes is MCP's limit on a tool name (^[a-zA-Z0-9_-]{1,64}$).
	MaxToolNameBytes = 64
	// MaxHeldTokens bounds the tokens capgate holds for one MCP client, over every session and
	// replica; the oldest goes when it is full.
	MaxHeldTokens = 64
	// DefaultTokenSeconds is the lifetime of a token whose request names no duration: short,
	// since the session can always ask again.
	DefaultTokenSeconds = 15 * 60
	// SessionIdle closes an MCP session that has sent nothing for this long (the client's
	// held tokens stay: they are the client's, not the session's).
	SessionIdle = 2 * time.Hour
	// ElicitTimeout bounds how long capgate waits for the client's answer to a URL
	// elicitation; the consent request itself waits as long as the broker's ConsentWait.
	ElicitTimeout = 10 * time.Minute
	// MaxArgumentBytes bounds a tool call's arguments, as the IPC API bounds an envelope.
	MaxArgumentBytes = 1 << 20
	// ToolsListTTL is how long a client may keep a tools/list result (2026-07-28's ttlMs):
	// short, since an operator's change to the client or an app changes it; a client that
	// listens (subscriptions/listen) is told of a change at once.
	ToolsListTTL = 10 * time.Second
	// ListenPoll is how often a subscriptions/listen stream looks for a change of its
	// client's tools: the client's record and the registry, which any replica may change.
	ListenPoll = time.Second
	// DiscoverTTL is how long a client may keep server/discover's answer, the same for all.
	DiscoverTTL = 10 * time.Minute
	// maxRequestBytes bounds an HTTP request's body: the arguments and the rest of the
	// message around them.
	maxRequestBytes = MaxArgumentBytes + 64<<10
	// MaxArgumentDepth bounds the nesting of a tool call's arguments.
	MaxArgumentDepth = 32
	// MaxWarmSessions bounds the 2026-07-28 servers kept built between requests, one per
	// client and gateway URL (warm.go): enough for every agent of one gateway, few enough
	// that the memory they hold stays small; the least recently used goes when it is full.
	MaxWarmSessions = 1024
	// WarmIdle drops a kept server its client has not used for this long.
	WarmIdle = 10 * time.Minute
	// MaxCachedTools bounds the tools kept built (toolCache): a tool per capability and way
	// a client may see it (its consent need), far more than a registry holds.
	MaxCachedTools = 1 << 14
	// MaxCachedHolders bounds the clients whose held tokens are kept in memory between
	// calls (heldCache), on a store that counts its changes.
	MaxCachedHolders = 4096
)
