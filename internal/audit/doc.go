// Package audit is capgate's tamper-evident audit log: the record of every decision and every
// outcome, chained by hash, written with group commit, signed by checkpoints and verified
// end to end.
//
// Nothing runs unaudited. The broker appends a [Record] for each decision before it acts and
// one for each outcome after; [Writer.Append] returns only once the record is durable in the
// store, and any error means the call must be refused. Concurrent appends share one store
// transaction (group commit), so the cost of durability is paid per batch, not per call.
// Several gateway replicas may share one store: the store's compare-and-set append keeps one
// chain, and a writer that loses the race rebuilds its batch on the new head.
//
// # Records
//
// A record's body is the RFC 8785 (JCS) canonical JSON of an object with exactly eighteen
// members, all present, strings and integers only: the token document's timestamp (Unix
// seconds), token_id, action, app, method, params_hash, result and audit_tag, and capgate's
// decision, code, explanation, client_id, capability, permission, call_id, consent_id,
// duration_ms and kind. Raw params are never stored: params_hash is "sha256:" and the hex
// SHA-256 of the params' canonical form ([ParamsHash]).
//
// # The chain
//
// Entry seq (1, 2, 3, … with no gap) has
//
//	hash = "sha256:" + lowercase-hex( SHA-256( "capgate-audit-v1" LF prev_hash LF seq LF body ) )
//
// where LF is the byte 0x0A, prev_hash is the text of entry seq-1's hash ("sha256:…") and the
// empty string for seq 1, seq is written in decimal ASCII without sign or leading zeros, and
// body is the stored bytes of the record with no trailing newline. An auditor can recompute
// it with a shell:
//
//	{ printf 'capgate-audit-v1\n%s\n%d\n' "$prev_hash" "$seq"; printf '%s' "$body"; } | sha256sum
//
// Test vector (vector_test.go holds it byte for byte): seq 1, prev_hash "", body
//
//	{"action":"execute","app":"terminal","audit_tag":"Code compilation task","call_id":"call_1","capability":"app.com.example.terminal.execute_command","client_id":"cl_agent","code":"","consent_id":"","decision":"allow","duration_ms":0,"explanation":"","kind":"decision","method":"execute_command","params_hash":"sha256:5b410c8ce6f62a8b432077021de038ddeead8ca42db705bbfc2d39dc2b69d36d","permission":"app.terminal.execute","result":"","timestamp":1706620800,"token_id":"cap_1234567890abcdef"}
//
// hashes to sha256:ee79f674ff7eb9e7e34616067ec1dae61579c9d4211798e4d6cdb4e7db923a01.
//
// The chain alone proves that no entry was changed, removed or moved without re-hashing
// everything after it; it cannot prove that nobody did re-hash everything after it, or cut
// the tail off. Checkpoints do.
//
// # Checkpoints
//
// A checkpoint is capgate's Ed25519 signature over the statement "the log had seq entries
// and entry seq had this hash". Its body is the canonical JSON
//
//	{"at":"<RFC 3339 UTC>","head":"sha256:…","seq":N,"signature":"ed25519:<base64>","version":"2"}
//
// and the signature (standard padded base64 of 64 bytes) covers [CheckpointContext] and then
// the canonical JSON of the same object without "signature" ([SignCheckpoint] is the one
// place a checkpoint is signed), so that the gateway key's signature over a token is never
// a checkpoint's. Checkpoints signed before versions, without "version" and signed over
// the canonical {"at","head","seq"} alone, still verify; none is signed again. The writer signs one every Options.CheckpointEvery entries and/or
// Options.CheckpointInterval, and at Close, whenever the head moved. A log rewritten at or
// before a checkpoint's seq no longer matches it. But checkpoints kept in the store prove
// nothing about a cut: records and checkpoints deleted together leave a shorter log that is
// consistent by itself. What is kept outside the store does.
//
// # The head file and witnesses
//
// A writer with Options.HeadPath keeps a head file beside the store (the gateway's
// DATA/audit.head, [HeadFile]): the log's head (seq and hash, unsigned) and the latest
// checkpoint, advanced by a goroutine of the writer once batches are durable in the store, at
// most every Options.HeadConfirm (20 ms), so that no caller waits for its sync: every record
// a caller acted on is at or below it within that time of the answer, and at Close; it is
// never ahead of the store, so a crash never makes it disagree. It holds
// two slots of 512 bytes, one line each,
//
//	{"checkpoint":<checkpoint body>|null,"format":"capgate-audit-head-v1","hash":"sha256:…","seq":N}
//
// padded with spaces, and a writer overwrites the older slot in place: a write torn by a
// crash leaves the other. Every writer sharing the folder (replicas, the command line beside a
// gateway) advances it under an exclusive lock, reading it first: it never goes back, and a
// head the store no longer leads to (the store was cut or rewritten) is left in place as
// evidence and logged, never overwritten.
//
// A witness ([Witness]: [FolderWitness], another folder; [HTTPWitness], a service speaking
// [WitnessHandler]'s protocol) is sent every checkpoint the writer signs, and keeps the
// highest. It is what someone who can rewrite the data folder, head file included, cannot
// reach.
//
// # Verification, export and the mirror
//
// [Verify] streams the log from the store and reports every broken rule with the seq where it
// shows; [VerifyWith] also holds it against the head file, the mirror, witnesses and the
// store's state that only recorded calls make (a token without its issue in the log, or an
// empty log in a store with clients or tokens), and says in its warnings what stays unproven:
// entries after the last signed checkpoint (rewritable by someone who also rewrites every
// head kept outside the store) and after the last head kept outside it (which could be cut).
//
// [Export] writes entries as JSON lines, one object per entry, with each checkpoint as a line
// of its own just after the entry at its seq:
//
//	{"at":"…","hash":"sha256:…","prev_hash":"…","record":<body as stored>,"seq":N}
//	{"checkpoint":{"at":"…","head":"sha256:…","seq":N,"signature":"ed25519:…"}}
//
// so that [VerifyExport] checks a file offline with the gateway's public key alone (and with a
// copy of the head file, that the file was not cut). Each line has one spelling.
//
// A writer may also keep a mirror (Options.Mirror: the lines of its own entries;
// Options.MirrorPath: a file kept as a whole copy of the log, entries only). The store is the
// record of truth: a mirror that cannot be written is logged and counted and never fails a
// call, so a mirror may lack lines but never holds a line the store lacks. A mirror file is
// appended under a lock by every writer sharing it, each adding from the store what the file
// lacks after its last line; what a crash leaves (the mirror behind the store, its last line
// cut short) is mended by the next writer, and verify reports it as a warning until then.
//
// The Writer is safe for concurrent use; Verify, Export and Tail only read. Nothing here
// panics on anything read from a store.
package audit
