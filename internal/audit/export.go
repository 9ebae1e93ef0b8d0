package audit

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/capgate/capgate/internal/jcs"
	"github.com/capgate/capgate/internal/store"
)

// appendLine appends e as one line of the export (and mirror) format, a JSON object with
// members in sorted order and a newline:
//
//	{"at":"<RFC 3339 UTC>","hash":"sha256:…","prev_hash":"…","record":<body>,"seq":N}
//
// record is the body exactly as stored, so that the hash can be recomputed from the line.
// A body that is not canonical JSON (a tampered or damaged store) cannot be embedded as it
// is; it is written as "record_base64" instead, so the line stays JSON and loses nothing.
func appendLine(dst []byte, e store.AuditEntry) []byte { return appendLineOf(dst, e, false) }

// appendLineOf is appendLine; canonical says the body is known to be canonical (the writer
// made it with Record.Body), which spares checking it again.
func appendLineOf(dst []byte, e store.AuditEntry, canonical bool) []byte {
	dst = append(dst, `{"at":`...)
	dst = strconv.AppendQuote(dst, formatAt(e.At))
	dst = append(dst, `,"hash":`...)
	dst = appendJSONString(dst, e.Hash)
	dst = append(dst, `,"prev_hash":`...)
	dst = appendJSONString(dst, e.PrevHash)
	if canonical || isCanonical(e.Body) {
		dst = append(dst, `,"record":`...)
		dst = append(dst, e.Body...)
	} else {
		dst = append(dst, `,"record_base64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, e.Body)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	return append(dst, "}\n"...)
}

func isCanonical(body []byte) bool {
	canon, err := jcs.Canonicalize(body)
	return err == nil && string(canon) == string(body)
}

// appendJSONString appends s as a JSON string. Hashes written by this package are ASCII;
// anything else from a damaged store is escaped by the canonical encoder, and text that is
// not even UTF-8 is replaced by a marker rather than written as invalid JSON.
func appendJSONString(dst []byte, s string) []byte {
	v := jcs.Value{Kind: jcs.String, Str: s}
	out, err := v.AppendCanonical(dst)
	if err != nil {
		return append(dst, `"<invalid UTF-8>"`...)
	}
	return out
}

// Export writes the entries with from <= seq <= to (to 0: to the end) to w as JSON lines in
// the format of the mirror, reading the store a page at a time, with each of the store's
// checkpoints in that range as a checkpoint line just after the entry at its seq (one past
// the last entry, when exporting to the end, after the last line), so that VerifyExport can
// check the file with the gateway's public key alone. It writes what the store holds without
// judging it; Verify judges.
func Export(ctx context.Context, s store.Audit, w io.Writer, from, to int64) error {
	if from < 1 {
		from = 1
	}
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		return fmt.Errorf("audit: export: read checkpoints: %w", err)
	}
	cps = slices.DeleteFunc(cps, func(c store.Checkpoint) bool { return c.Seq < from || to != 0 && c.Seq > to })
	slices.SortStableFunc(cps, func(a, b store.Checkpoint) int { return cmp.Compare(a.Seq, b.Seq) })
	bw := bufio.NewWriter(w)
	var buf []byte
	// emit writes the checkpoints up to seq.
	emit := func(seq int64) error {
		for len(cps) > 0 && cps[0].Seq <= seq {
			buf = appendCheckpointLine(buf[:0], cps[0])
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("audit: export: %w", err)
			}
			cps = cps[1:]
		}
		return nil
	}
	for to == 0 || from <= to {
		page, err := s.AuditRange(ctx, from, to, verifyPageSize)
		if err != nil {
			return fmt.Errorf("audit: export from seq %d: %w", from, err)
		}
		next := from
		for _, e := range page {
			if err := emit(e.Seq - 1); err != nil {
				return err
			}
			buf = appendLine(buf[:0], e)
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("audit: export: %w", err)
			}
			if err := emit(e.Seq); err != nil {
				return err
			}
			next = max(next, e.Seq+1)
		}
		if len(page) < verifyPageSize || next == from {
			break
		}
		from = next
	}
	// Checkpoints past the last entry (the log was cut below them) are written too, for the
	// verifier to see.
	if err := emit(math.MaxInt64); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("audit: export: %w", err)
	}
	return nil
}

// Tail returns the last n entries of the log, oldest first, decoded; fewer when the log is
// shorter, none for an empty log or n <= 0. An entry whose body does not decode is an error
// wrapping ErrInvalidRecord that names its seq: run Verify.
func Tail(ctx context.Context, s store.Audit, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	h, err := s.AuditHead(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: tail: %w", err)
	}
	from := max(1, h.Seq-int64(n)+1)
	raw, err := s.AuditRange(ctx, from, h.Seq, n)
	if err != nil {
		return nil, fmt.Errorf("audit: tail: %w", err)
	}
	out := make([]Entry, 0, len(raw))
	for _, e := range raw {
		d, err := DecodeEntry(e)
		if err != nil {
			return nil, fmt.Errorf("audit: tail: entry %d: %w", e.Seq, err)
		}
		out = append(out, d)
	}
	return out, nil
}
