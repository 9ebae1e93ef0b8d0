package store

// Column values, shared by the SQL backends. Both schemas give every table the same columns
// (the *Columns lists), so that turning a record into its columns and back is written once
// here and each backend keeps only its SQL and its driver's types.

// NullInt is a nullable integer column, a time's Unix nanoseconds among them (TimeCol). It has
// the layout of database/sql's NullInt64 and pgx's pgtype.Int8, so that a backend turns one,
// or a pointer to one, into its driver's type with a conversion that costs nothing:
// sql.NullInt64(n), (*pgtype.Int8)(&n).
type NullInt struct {
	Int64 int64
	Valid bool // false: NULL
}

// NullText is a nullable text column, with the layout of sql.NullString and pgtype.Text.
type NullText struct {
	String string
	Valid  bool // false: NULL
}

// Text is s as a nullable column: NULL for "".
func Text(s string) NullText { return NullText{String: s, Valid: s != ""} }

// Blob is b as a byte column: the columns are NOT NULL, so nil is stored as empty. A store
// need not tell nil from empty.
func Blob(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// NullTypes gives the driver's own destination for a nullable column, and its own value for
// one in a statement's arguments, so that the scans and the argument lists here serve every
// driver: a backend implements it with conversions (NullInt's comment says why they are free)
// on a type with no fields, which goes into the interface without an allocation.
type NullTypes interface {
	Int(*NullInt) any
	Text(*NullText) any
	// IntArg is n as an argument of a statement.
	IntArg(n NullInt) any
}

// Scanner is one row of a query's result: *sql.Row and *sql.Rows, pgx.Row and pgx.Rows.
type Scanner interface {
	Scan(dest ...any) error
}

// Rows is a query's result as both drivers give it (*sql.Rows, pgx.Rows).
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Collect reads every row with scan and returns them in order; no rows is nil. It does not
// close rows (the drivers' Close methods differ): the caller defers that, which also ends
// a result left unread by a failed scan.
func Collect[T any](rows Rows, n NullTypes, scan func(Scanner, NullTypes) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows, n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanString reads a row of one text column, for Collect.
func ScanString(sc Scanner, _ NullTypes) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}
