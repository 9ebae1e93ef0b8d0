package store

import "github.com/capgate/capgate/manifest"

// ClientColumns are a client's columns in both schemas, in the order ScanClient reads them.
const ClientColumns = `id, name, key_hash, trust, never_ask, unix_uid, created, disabled, require_token, assistant`

// ClientRow is a Client as its columns hold it: UnixUID NULL when unset, Created as TimeCol
// has it.
type ClientRow struct {
	ID, Name, KeyHash, Trust string
	NeverAsk                 bool
	UnixUID                  NullInt
	Created                  NullInt
	Disabled, RequireToken   bool
	Assistant                string
}

// Args is r's columns in ClientColumns order, as the arguments of a statement of n's driver.
func (r ClientRow) Args(n NullTypes) []any {
	return []any{r.ID, r.Name, r.KeyHash, r.Trust, r.NeverAsk, n.IntArg(r.UnixUID), n.IntArg(r.Created),
		r.Disabled, r.RequireToken, r.Assistant}
}

// UpdateArgs is r's columns after the id, in ClientColumns order, then the id: the arguments
// of an UPDATE that sets every other column of the client with the id.
func (r ClientRow) UpdateArgs(n NullTypes) []any {
	args := r.Args(n)
	return append(args[1:], args[0])
}

// ClientRowOf checks c as PutClient and UpdateClient take it and returns its columns:
// Created a time TimeCol holds.
func ClientRowOf(c Client) (ClientRow, error) {
	created, err := TimeCol("client.Created", c.Created)
	if err != nil {
		return ClientRow{}, err
	}
	r := ClientRow{ID: c.ID, Name: c.Name, KeyHash: c.KeyHash, Trust: string(c.Trust), NeverAsk: c.NeverAsk,
		Created: created, Disabled: c.Disabled, RequireToken: c.RequireToken, Assistant: c.Assistant}
	if c.UnixUID != nil {
		r.UnixUID = NullInt{Int64: int64(*c.UnixUID), Valid: true}
	}
	return r, nil
}

// ScanClient reads a row of ClientColumns. The trust column's text becomes a
// manifest.AuthLevel here, at the store's edge; a word outside manifest.AuthLevels (a row
// written by hand) is kept as it is, and the decision reads it as public.
func ScanClient(sc Scanner, n NullTypes) (Client, error) {
	var r ClientRow
	if err := sc.Scan(&r.ID, &r.Name, &r.KeyHash, &r.Trust, &r.NeverAsk, n.Int(&r.UnixUID), n.Int(&r.Created),
		&r.Disabled, &r.RequireToken, &r.Assistant); err != nil {
		return Client{}, err
	}
	c := Client{ID: r.ID, Name: r.Name, KeyHash: r.KeyHash, Trust: manifest.AuthLevel(r.Trust), NeverAsk: r.NeverAsk,
		Created: r.Created.Time(), Disabled: r.Disabled, RequireToken: r.RequireToken, Assistant: r.Assistant}
	if r.UnixUID.Valid {
		uid := int(r.UnixUID.Int64)
		c.UnixUID = &uid
	}
	return c, nil
}
