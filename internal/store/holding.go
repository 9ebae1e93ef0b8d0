package store

import (
	"encoding/json"
	"errors"
	"fmt"
)

// HoldingColumns are a holding's columns in both schemas, in the order ScanHolding reads
// them.
const HoldingColumns = `handle, client_id, token_id, wire, grants, max_uses, constrained, expires_at, created`

// HoldingRow is a Holding as its columns hold it: grants as a JSON array, times as TimeCol
// has them.
type HoldingRow struct {
	Handle, ClientID, TokenID, Wire, Grants string
	MaxUses                                 int64
	Constrained                             bool
	ExpiresAt, Created                      NullInt
}

// Args is r's columns in HoldingColumns order, as the arguments of a statement of n's driver.
func (r HoldingRow) Args(n NullTypes) []any {
	return []any{r.Handle, r.ClientID, r.TokenID, r.Wire, r.Grants, r.MaxUses, r.Constrained, n.IntArg(r.ExpiresAt), n.IntArg(r.Created)}
}

// HoldingRowOf checks h as PutHolding takes it and returns its columns: a handle, a client,
// a token id and its wire form, at least one grant, no negative use limit, and times that
// TimeCol holds, the expiry not the zero time.
func HoldingRowOf(h Holding) (HoldingRow, error) {
	var problems []error
	for _, f := range []struct{ name, v string }{{"holding.Handle", h.Handle}, {"holding.ClientID", h.ClientID},
		{"holding.TokenID", h.TokenID}, {"holding.Wire", h.Wire}} {
		if f.v == "" {
			problems = append(problems, fmt.Errorf("%s: must not be empty", f.name))
		}
	}
	if len(h.Grants) == 0 {
		problems = append(problems, errors.New("holding.Grants: must name at least one permission"))
	}
	if h.MaxUses < 0 {
		problems = append(problems, errors.New("holding.MaxUses: must not be negative"))
	}
	if h.ExpiresAt.IsZero() {
		problems = append(problems, errors.New("holding.ExpiresAt: must not be the zero time"))
	}
	var ts times
	r := HoldingRow{Handle: h.Handle, ClientID: h.ClientID, TokenID: h.TokenID, Wire: h.Wire, MaxUses: h.MaxUses,
		Constrained: h.Constrained, ExpiresAt: ts.col("holding.ExpiresAt", h.ExpiresAt), Created: ts.col("holding.Created", h.Created)}
	if ts.err != nil {
		problems = append(problems, ts.err)
	}
	if len(problems) > 0 {
		return HoldingRow{}, errors.Join(problems...)
	}
	g, err := json.Marshal(h.Grants)
	if err != nil {
		return HoldingRow{}, fmt.Errorf("holding.Grants: %w", err)
	}
	r.Grants = string(g)
	return r, nil
}

// ScanHolding reads a row of HoldingColumns.
func ScanHolding(sc Scanner, n NullTypes) (Holding, error) {
	var r HoldingRow
	if err := sc.Scan(&r.Handle, &r.ClientID, &r.TokenID, &r.Wire, &r.Grants, &r.MaxUses, &r.Constrained,
		n.Int(&r.ExpiresAt), n.Int(&r.Created)); err != nil {
		return Holding{}, err
	}
	h := Holding{Handle: r.Handle, ClientID: r.ClientID, TokenID: r.TokenID, Wire: r.Wire, MaxUses: r.MaxUses,
		Constrained: r.Constrained, ExpiresAt: r.ExpiresAt.Time(), Created: r.Created.Time()}
	if err := json.Unmarshal([]byte(r.Grants), &h.Grants); err != nil {
		return Holding{}, fmt.Errorf("holding %s: grants: %w", r.Handle, err)
	}
	return h, nil
}
