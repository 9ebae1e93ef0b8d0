package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
)

// FuzzVerifyBody puts arbitrary bytes as the body of entry 2 of a three-entry log, with the
// chain re-hashed around it, and checks that Verify never panics, and reports a problem at
// seq 2 exactly when the bytes are not the canonical body of a valid record.
func FuzzVerifyBody(f *testing.F) {
	f.Add([]byte(vecBody1))
	f.Add([]byte(vecBody2))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"action":1}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Add([]byte(`{"action":"execute","action":"x"}`))
	base := buildLog(f, 3)
	pub := pubOf(testKey())
	f.Fuzz(func(t *testing.T, body []byte) {
		m := &memAudit{entries: make([]store.AuditEntry, len(base.entries))}
		for i, e := range base.entries {
			m.entries[i] = cloneEntry(e)
		}
		m.entries[1].Body = body
		rehashFrom(m, 1)
		rep, err := Verify(context.Background(), m, pub)
		if err != nil {
			t.Fatal(err)
		}
		_, decodeErr := DecodeRecord(body)
		flagged := false
		for _, p := range rep.Problems {
			if p.Seq != 2 {
				t.Fatalf("problem at seq %d for a body at seq 2: %v", p.Seq, p)
			}
			flagged = true
		}
		if flagged != (decodeErr != nil) {
			t.Fatalf("flagged %v, decode error %v", flagged, decodeErr)
		}
		if decodeErr == nil {
			// A body that decodes is the one canonical spelling of its record.
			r, _ := DecodeRecord(body)
			again, err := r.Body()
			if err != nil || string(again) != string(body) {
				t.Fatalf("decoded body does not round-trip: %v", err)
			}
		}

		// Without the re-hash the edit must show, whatever the bytes.
		m.entries[1].Hash = base.entries[1].Hash
		m.entries[2].PrevHash = base.entries[2].PrevHash
		m.entries[2].Hash = base.entries[2].Hash
		rep, _ = Verify(context.Background(), m, pub)
		if string(body) != string(base.entries[1].Body) && rep.OK() {
			t.Fatal("edited body not detected")
		}
	})
}

// FuzzVerifyCheckpoint checks that arbitrary checkpoint bodies never panic VerifyCheckpoint
// and never verify unless they are exactly what SignCheckpoint would write.
func FuzzVerifyCheckpoint(f *testing.F) {
	f.Add([]byte(vecCheckpoint), int64(2))
	f.Add([]byte(`{}`), int64(1))
	pub := pubOf(testKey())
	f.Fuzz(func(t *testing.T, body []byte, seq int64) {
		c := store.Checkpoint{Seq: seq, Head: vecHash2, Body: body}
		if err := VerifyCheckpoint(pub, c); err == nil && string(body) != vecCheckpoint {
			t.Fatalf("forged checkpoint verified: %q", body)
		}
	})
}

// FuzzParseHead checks that ParseHead never panics on arbitrary bytes, and that what it
// accepts is the one spelling of a head: written back, it is the same bytes. A whole file of
// two slots is read the same way.
func FuzzParseHead(f *testing.F) {
	f.Add(appendHead(nil, testHead(7, 5)))
	f.Add(appendHead(nil, testHead(1, 0)))
	f.Add([]byte(`{"checkpoint":null,"format":"capgate-audit-head-v1","hash":"x","seq":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHead(b)
		if err == nil {
			if again := appendHead(nil, h); string(again) != string(b) {
				t.Fatalf("accepted %q, which writes back as %q", b, again)
			}
			if h.Seq < 1 || h.Checkpoint.Seq > h.Seq {
				t.Fatalf("accepted an impossible head %+v", h)
			}
		}
		// Accepted, it is read back from a head file's slot; any bytes the size of a file
		// are read as one without a panic.
		if err == nil {
			slot, serr := encodeSlot(h)
			if serr != nil {
				t.Fatalf("an accepted head does not fit a slot: %v", serr)
			}
			c, ferr := parseHeadFile(append(slot, slot...))
			if ferr != nil || !sameHead(c.Head, h) {
				t.Fatalf("the head read back from a file: %+v %v", c, ferr)
			}
		}
		if len(b) >= headFileSize {
			_, _ = parseHeadFile(b[:headFileSize])
		}
		_, _ = parseHeadFile(b)
	})
}

// FuzzParseLine checks that parseLine never panics, and that every line it accepts is the one
// spelling of what it read: an entry or a checkpoint written back gives the same bytes.
func FuzzParseLine(f *testing.F) {
	m := buildLog(f, 2, 2)
	f.Add(bytes.TrimSuffix(appendLine(nil, m.entries[0]), []byte("\n")))
	f.Add(bytes.TrimSuffix(appendLine(nil, store.AuditEntry{Seq: 3, At: testTime, Body: []byte("not json")}), []byte("\n")))
	f.Add(bytes.TrimSuffix(appendCheckpointLine(nil, m.checkpoints[0]), []byte("\n")))
	f.Add([]byte(`{"at":"2026-12-01T10:00:00Z","hash":"","prev_hash":"","record":[[[1]]],"seq":1}`))
	f.Add([]byte(`{"checkpoint":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pl, err := parseLine(b)
		if err != nil {
			return
		}
		var again []byte
		if pl.checkpoint.Seq != 0 {
			again = appendCheckpointLine(nil, pl.checkpoint)
		} else {
			again = appendLine(nil, pl.entry)
		}
		if string(again) != string(b)+"\n" {
			t.Fatalf("accepted %q, which writes back as %q", b, again)
		}
	})
}

// FuzzVerifyExport checks that VerifyExport never panics or fails on any file, and that a
// file it calls intact with a checkpoint chains up to that checkpoint: altering a byte of an
// intact export, before its last checkpoint line, never leaves it intact with that checkpoint.
func FuzzVerifyExport(f *testing.F) {
	m := buildLog(f, 4, 2, 4)
	var buf bytes.Buffer
	if err := Export(context.Background(), m, &buf, 1, 0); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	lastCP := bytes.LastIndex(good, []byte(`{"checkpoint":`))
	f.Add(good, uint16(0), byte(0))
	f.Add(good, uint16(40), byte('x'))
	f.Add([]byte("{}\n\n"), uint16(0), byte(0))
	pub := pubOf(testKey())
	f.Fuzz(func(t *testing.T, file []byte, at uint16, with byte) {
		rep, err := VerifyExport(context.Background(), bytes.NewReader(file), pub, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = rep
		// The intact export, with one byte changed before its last checkpoint line, outside
		// the entries' "at", which no hash covers (the record's timestamp is covered).
		i := int(at) % lastCP
		if good[i] == with || inAt(good, i) {
			return
		}
		altered := bytes.Clone(good)
		altered[i] = with
		rep, err = VerifyExport(context.Background(), bytes.NewReader(altered), pub, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() && rep.LastCheckpointSeq == 4 && rep.Entries == 4 {
			t.Fatalf("byte %d changed to %q and the export is still intact up to its checkpoint", i, with)
		}
	})
}

// FuzzMirrorRepair gives a writer a mirror file of arbitrary content beside a store of three
// entries: it never panics, and either counts a refusal or leaves the mirror ending with the
// store's last entry, nothing missing at its end (lines before the last are not read by a
// writer, and verify reports them); a mirror that was a prefix of the log, cut anywhere,
// becomes the whole log.
func FuzzMirrorRepair(f *testing.F) {
	base := buildLog(f, 3)
	var buf bytes.Buffer
	if err := Export(context.Background(), base, &buf, 1, 0); err != nil {
		f.Fatal(err)
	}
	whole := buf.Bytes()
	f.Add(whole)
	f.Add(whole[:len(whole)-7])
	f.Add(whole[:bytes.IndexByte(whole, '\n')+1])
	f.Add([]byte{})
	f.Add([]byte("\n\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, content []byte) {
		m := &memAudit{entries: base.entries}
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		w := NewWriter(m, &Options{MirrorPath: path, Logger: quietLogger()})
		w.Close()
		rep, err := VerifyWith(context.Background(), m, pubOf(testKey()), &VerifyOptions{Mirror: path})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if w.Stats().MirrorErrors == 0 && (!bytes.HasSuffix(got, whole[bytes.LastIndexByte(whole[:len(whole)-1], '\n')+1:]) || hasWarning(rep, SourceMirror, "")) {
			t.Fatalf("the mirror was neither caught up nor refused: %q %v %v", got, rep.Problems, rep.Warnings)
		}
		if bytes.HasPrefix(whole, content) && string(got) != string(whole) {
			t.Fatalf("a prefix of the log was not repaired to the log:\n%q", got)
		}
	})
}

// inAt reports whether byte i of an export is inside an entry line's "at" member.
func inAt(export []byte, i int) bool {
	start := bytes.LastIndexByte(export[:i+1], '\n') + 1
	line := export[start:]
	const prefix = `{"at":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return false
	}
	end := bytes.IndexByte(line[len(prefix):], '"') + len(prefix)
	return i-start < end+2
}

// FuzzRecordBody builds records from arbitrary strings and integers and checks that Body,
// which writes the canonical form itself, writes exactly what the jcs package's
// canonicalization of the same object writes, and that DecodeRecord reads it back.
func FuzzRecordBody(f *testing.F) {
	f.Add("query", "settings", "\u2028\"\\\x01\x7f", "é🙂", int64(1796307060), int64(0))
	f.Add("", "", "\xff", "", int64(1), int64(9007199254740991))
	f.Fuzz(func(t *testing.T, action, app, expl, tag string, ts, dur int64) {
		r := Record{Timestamp: ts, Action: action, App: app, Explanation: expl, AuditTag: tag, DurationMS: dur,
			Decision: DecisionAllow, Kind: KindDecision, Result: "allowed"}
		body, err := r.Body()
		if err != nil {
			if r.Validate() == nil {
				t.Fatalf("Body refused a record Validate accepts: %v", err)
			}
			return
		}
		members := make([]jcs.Member, 0, 18)
		for i, fd := range r.fields() {
			v := jcs.Value{Kind: jcs.Number, Float: 0}
			if fd.s != nil {
				v = jcs.Value{Kind: jcs.String, Str: *fd.s}
			} else {
				v.Float = float64(*fd.n)
			}
			members = append(members, jcs.Member{Name: fieldNames[i], Value: v})
		}
		want, err := jcs.Value{Kind: jcs.Object, Members: members}.AppendCanonical(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Fatalf("Body wrote\n%s\nthe canonical form is\n%s", body, want)
		}
		back, err := DecodeRecord(body)
		if err != nil || back != r {
			t.Fatalf("DecodeRecord: %v, %+v", err, back)
		}
	})
}
