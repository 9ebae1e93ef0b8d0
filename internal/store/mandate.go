package store

// MandateColumns are a mandate's columns in both schemas, in the order ScanMandate reads
// them.
const MandateColumns = `permission, autonomy, agreed_id, wording, agreed_at, updated`

// MandateRow is a Mandate as its columns hold it: times as TimeCol has them.
type MandateRow struct {
	Permission, Autonomy, AgreedID, Wording string
	AgreedAt, Updated                       NullInt
}

// Args is r's columns in MandateColumns order, as the arguments of a statement of n's driver.
func (r MandateRow) Args(n NullTypes) []any {
	return []any{r.Permission, r.Autonomy, r.AgreedID, r.Wording, n.IntArg(r.AgreedAt), n.IntArg(r.Updated)}
}

// MandateRowOf checks m as PutMandate takes it and returns its columns: every time one
// TimeCol holds.
func MandateRowOf(m Mandate) (MandateRow, error) {
	var ts times
	r := MandateRow{Permission: m.Permission, Autonomy: m.Autonomy, AgreedID: m.AgreedID, Wording: m.Wording,
		AgreedAt: ts.col("mandate.AgreedAt", m.AgreedAt), Updated: ts.col("mandate.Updated", m.Updated)}
	if ts.err != nil {
		return MandateRow{}, ts.err
	}
	return r, nil
}

// ScanMandate reads a row of MandateColumns.
func ScanMandate(sc Scanner, n NullTypes) (Mandate, error) {
	var r MandateRow
	if err := sc.Scan(&r.Permission, &r.Autonomy, &r.AgreedID, &r.Wording, n.Int(&r.AgreedAt), n.Int(&r.Updated)); err != nil {
		return Mandate{}, err
	}
	return Mandate{Permission: r.Permission, Autonomy: r.Autonomy, AgreedID: r.AgreedID, Wording: r.Wording,
		AgreedAt: r.AgreedAt.Time(), Updated: r.Updated.Time()}, nil
}
