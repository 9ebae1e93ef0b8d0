// Package syslog is the System Log app of the token document as a Tier 1 app: get_logs reads
// capgate's own recent log, kept in a Ring that the gateway installs as (a tee of) its slog
// handler, filtered by severity and paged, oldest entry first.
//
// It is not a reader of the operating system's log, and it keeps nothing on disk: the Ring
// holds the last entries in memory and forgets the oldest when full. Messages are stored as
// they were logged, cut to MaxEntryBytes: they may hold text an attacker chose (a path, a
// client's name), and are data to whoever reads them, never instructions.
package syslog
