package store

import "fmt"

// Migration is one step of a SQL backend's schema. Steps are applied in order, each once,
// each in its own transaction, and recorded in the backend's schema_migrations table; a
// backend's step i+1 is its steps[i].
//
// Evolution rule: a released step is never edited; a change is a new step at the end. Each
// backend's TestMigrationsUnchanged holds its released steps to their digests.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// String names the step in errors: "migration 3 (token functions)".
func (m Migration) String() string { return fmt.Sprintf("migration %d (%s)", m.Version, m.Name) }

// NextMigration returns the step of steps that follows version applied, the highest a
// database has recorded; ok is false when applied is the last. A database whose version is
// newer than steps knows is an error: this capgate must not write to a schema a newer one
// made. It panics if steps are misnumbered, a fault of the code, not of the database.
func NextMigration(steps []Migration, applied int) (next Migration, ok bool, err error) {
	for i, m := range steps {
		if m.Version != i+1 {
			panic(fmt.Sprintf("store: migration %d has version %d", i+1, m.Version))
		}
	}
	switch {
	case applied > len(steps):
		return Migration{}, false, fmt.Errorf("database schema version %d is newer than this capgate understands (%d)", applied, len(steps))
	case applied == len(steps):
		return Migration{}, false, nil
	}
	return steps[applied], true, nil
}
