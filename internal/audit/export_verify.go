package audit

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ExportVerifyOptions are what VerifyExport holds an export against besides the checkpoints
// in it. A nil *ExportVerifyOptions holds it against nothing else.
type ExportVerifyOptions struct {
	// HeadFile is the path of a head file (a copy of the data folder's audit.head): the
	// export must reach its head and match it, and hold its checkpoint.
	HeadFile string
	// Witnesses are asked for the checkpoint each holds, which the export must reach.
	Witnesses []Witness
}

// VerifyExport checks a file written by Export (or `capgate audit export`), offline, with the
// gateway's public key alone: every line is an entry line or a checkpoint line in its one
// spelling; the entries chain as in the store (Verify's rules), from the first seq in the
// file; each checkpoint line verifies with pub, follows the entry at its seq and names that
// entry's hash as its head; and, with opts, the export reaches each head kept outside the
// store and matches it there. An export that starts after seq 1 is checked from its first
// entry on (a warning says so). The Report's warnings say what stays unproven: entries after
// the last checkpoint line, which someone with the key could have rewritten, and, without a
// head or witness to compare with, whether the file was cut after its last line.
//
// VerifyExport returns an error only when r cannot be read or pub is not an Ed25519 public
// key; everything found in the file is in the Report.
func VerifyExport(ctx context.Context, r io.Reader, pub ed25519.PublicKey, opts *ExportVerifyOptions) (Report, error) {
	var rep Report
	if len(pub) != ed25519.PublicKeySize {
		return rep, errors.New("audit: verify export: public key is not 32 bytes")
	}
	var o ExportVerifyOptions
	if opts != nil {
		o = *opts
	}
	v := chainCheck{rep: &rep, expect: map[int64][]expectation{}, outside: true, export: true}
	outsideCPs := v.readOutside(ctx, pub, o.Witnesses, o.HeadFile)

	br := bufio.NewReaderSize(r, 64<<10)
	exported := map[int64]string{} // the export's valid checkpoints: seq → head
	var first, prevCP int64
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		b, complete, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("audit: verify export: %w", err)
		}
		at := "line " + strconv.Itoa(n) + ": "
		next := v.last.seq + 1
		if !complete {
			rep.problem(next, SourceExport, at+"the file ends inside a line: it was cut")
			break
		}
		if b == nil {
			rep.problem(next, SourceExport, at+"longer than "+strconv.Itoa(MaxLineBytes)+" bytes")
			continue
		}
		pl, err := parseLine(b)
		if err != nil {
			rep.problem(next, SourceExport, at+lineRule(err))
			continue
		}
		if c := pl.checkpoint; c.Seq != 0 {
			rep.Checkpoints++
			if prevCP != 0 && c.Seq <= prevCP {
				rep.problem(c.Seq, SourceExport, at+"checkpoint seqs do not strictly increase")
			}
			prevCP = c.Seq
			if err := VerifyCheckpoint(pub, c); err != nil {
				rep.problem(c.Seq, SourceExport, at+"checkpoint: "+ruleOf(err, ErrBadCheckpoint))
				continue
			}
			rep.LastCheckpointSeq = max(rep.LastCheckpointSeq, c.Seq)
			exported[c.Seq] = c.Head
			switch {
			case c.Seq > v.last.seq:
				rep.problem(c.Seq, SourceExport, at+"checkpoint past the last entry (seq "+strconv.FormatInt(v.last.seq, 10)+"): entries were deleted")
			case c.Seq < v.last.seq || first == 0:
				rep.problem(c.Seq, SourceExport, at+"checkpoint not just after the entry at its seq")
			case c.Head != v.last.hash:
				rep.problem(c.Seq, SourceExport, at+"hash differs from the signed checkpoint's head: the log was rewritten at or before this seq")
			}
			continue
		}
		e := pl.entry
		if first == 0 {
			first = e.Seq
			if e.Seq > 1 {
				// Nothing in the file says what came before: the chain starts where it does.
				v.last = head{seq: e.Seq - 1, hash: e.PrevHash}
				rep.warn(e.Seq, SourceExport, "the export starts at seq "+strconv.FormatInt(e.Seq, 10)+": entries before it are not in the file, and its first prev_hash is taken as given")
			}
		}
		v.entry(e)
	}
	if first == 0 {
		rep.warn(0, SourceExport, "the export holds no entries")
	}
	for _, x := range outsideCPs {
		if x.seq < first {
			continue
		}
		if h, ok := exported[x.seq]; !ok || h != x.hash {
			rep.problem(x.seq, x.source, "the export lacks the checkpoint at this seq that "+x.holder+" holds: checkpoints were left out or deleted")
		}
	}
	// Heads below the export's first entry cannot be checked against it.
	for seq, xs := range v.expect {
		if first > 1 && seq < first {
			for _, x := range xs {
				rep.warn(seq, x.source, "before the export's first entry: the "+x.kind()+" "+x.holder+" holds is not checked")
			}
			delete(v.expect, seq)
		}
	}
	v.finish()
	sortProblems(rep.Problems)
	return rep, nil
}
