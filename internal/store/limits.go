package store

// MaxTokenDepth bounds the walk up a token's ancestors (TakeUse) and down its descendants
// (Revoke, DeleteClient) in every store: derivation chains are a few links long, and the
// bound turns a corrupt (cyclic) chain into an error instead of a hang or a runaway query.
const MaxTokenDepth = 64
