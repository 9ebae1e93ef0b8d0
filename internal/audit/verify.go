package audit

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/capgate/capgate/internal/store"
)

// Problem is one rule the log breaks, at the entry (or checkpoint) seq where it shows.
type Problem struct {
	Seq  int64  `json:"seq"`
	Rule string `json:"rule"`
}

func (p Problem) String() string { return "seq " + strconv.FormatInt(p.Seq, 10) + ": " + p.Rule }

// Report is what Verify found. The log is proven intact up to LastCheckpointSeq when OK;
// entries after it are consistent but unproven (see Warnings).
type Report struct {
	Entries           int64  `json:"entries"`             // entries read
	Checkpoints       int    `json:"checkpoints"`         // checkpoints read, valid or not
	LastCheckpointSeq int64  `json:"last_checkpoint_seq"` // seq of the last checkpoint that verified, 0 for none
	Head              string `json:"head"`                // hash of the last entry read, "" for an empty log
	// Problems are failures: the log was altered, or the store lost what it acknowledged.
	Problems []Problem `json:"problems"`
	// ProblemsOmitted counts problems beyond MaxProblems, not listed.
	ProblemsOmitted int `json:"problems_omitted"`
	// Warnings are facts that are not failures: entries after the last checkpoint, whose
	// deletion (or rewriting) nothing could reveal.
	Warnings []Problem `json:"warnings"`
}

// OK reports whether Verify found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.ProblemsOmitted == 0 }

func (r *Report) problem(seq int64, rule string) {
	if len(r.Problems) >= MaxProblems {
		r.ProblemsOmitted++
		return
	}
	r.Problems = append(r.Problems, Problem{Seq: seq, Rule: rule})
}

// Verify reads the whole log and its checkpoints from s, page by page, and reports every
// rule they break:
//
//   - entries: the seqs run 1, 2, 3, ... with no gap, repeat or reordering; each PrevHash
//     is the Hash of the entry before ("" for seq 1); each Hash is EntryHash of its own
//     PrevHash, Seq and Body; each Body is what DecodeRecord accepts;
//   - checkpoints: each verifies with pub (VerifyCheckpoint); their seqs strictly increase;
//     the entry at each checkpoint's seq exists and its Hash is the checkpoint's head. A
//     checkpoint past the end of the log means entries up to it were deleted.
//
// A log edited and re-hashed from some entry on is consistent by itself; only a checkpoint
// at or after the edit reveals it, so entries after the last checkpoint are reported as a
// warning: they are unproven, not wrong. Writers sign checkpoints often for this reason.
//
// Verify returns an error only when it could not read the log (a store error, ctx done) or
// pub is not an Ed25519 public key; everything found in the log is in the Report.
func Verify(ctx context.Context, s store.Audit, pub ed25519.PublicKey) (Report, error) {
	var rep Report
	if len(pub) != ed25519.PublicKeySize {
		return rep, errors.New("audit: verify: public key is not 32 bytes")
	}
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		return rep, fmt.Errorf("audit: verify: read checkpoints: %w", err)
	}
	rep.Checkpoints = len(cps)
	// heads maps each seq a valid checkpoint signed to its head; a log rarely has more
	// checkpoints than pages, so this is the only state that grows with the log.
	heads := make(map[int64]string, len(cps))
	var prevCP int64
	for i, c := range cps {
		if i > 0 && c.Seq <= prevCP {
			rep.problem(c.Seq, "checkpoint seqs do not strictly increase")
		}
		prevCP = c.Seq
		if err := VerifyCheckpoint(pub, c); err != nil {
			rep.problem(c.Seq, "checkpoint: "+ruleOf(err, ErrBadCheckpoint))
			continue
		}
		heads[c.Seq] = c.Head
		rep.LastCheckpointSeq = max(rep.LastCheckpointSeq, c.Seq)
	}

	v := chainCheck{rep: &rep, heads: heads}
	from := int64(1)
	for {
		page, err := s.AuditRange(ctx, from, 0, verifyPageSize)
		if err != nil {
			return rep, fmt.Errorf("audit: verify: read entries from seq %d: %w", from, err)
		}
		if len(page) == 0 {
			break
		}
		progressed := false
		for _, e := range page {
			v.entry(e)
			if e.Seq >= from {
				from = e.Seq + 1
				progressed = true
			}
		}
		if !progressed {
			// A store that answers a range with entries before it would loop forever.
			rep.problem(from, "store returned entries out of the range asked for")
			break
		}
		if len(page) < verifyPageSize {
			break
		}
	}

	last := v.last.seq
	for seq := range heads {
		if !v.matched[seq] {
			if seq > last {
				rep.problem(seq, "checkpoint past the end of the log (last entry "+strconv.FormatInt(last, 10)+"): entries were deleted")
			} else {
				rep.problem(seq, "no entry at the checkpoint's seq")
			}
		}
	}
	if last > rep.LastCheckpointSeq {
		rep.Warnings = append(rep.Warnings, Problem{
			Seq:  rep.LastCheckpointSeq + 1,
			Rule: "entries " + strconv.FormatInt(rep.LastCheckpointSeq+1, 10) + " to " + strconv.FormatInt(last, 10) + " are after the last checkpoint: their deletion or rewriting could not be detected",
		})
	}
	sortProblems(rep.Problems)
	return rep, nil
}

// chainCheck is the entry-by-entry state of Verify (and of anything else that walks a log in
// order): the last entry seen and which checkpoints were met.
type chainCheck struct {
	rep     *Report
	heads   map[int64]string
	matched map[int64]bool
	last    head // highest seq seen and its hash
}

func (v *chainCheck) entry(e store.AuditEntry) {
	rep := v.rep
	rep.Entries++
	want := v.last.seq + 1
	switch {
	case e.Seq == want:
		if e.PrevHash != v.last.hash {
			rep.problem(e.Seq, "prev_hash is not the hash of entry "+strconv.FormatInt(v.last.seq, 10))
		}
	case e.Seq > want:
		if e.Seq == want+1 {
			rep.problem(want, "entry missing")
		} else {
			rep.problem(want, "entries "+strconv.FormatInt(want, 10)+" to "+strconv.FormatInt(e.Seq-1, 10)+" missing")
		}
	default:
		rep.problem(e.Seq, "entry out of order or repeated (after seq "+strconv.FormatInt(v.last.seq, 10)+")")
	}
	if EntryHash(e.PrevHash, e.Seq, e.Body) != e.Hash {
		rep.problem(e.Seq, "hash does not match the entry's body, seq and prev_hash")
	}
	if _, err := DecodeRecord(e.Body); err != nil {
		rep.problem(e.Seq, "body: "+ruleOf(err, ErrInvalidRecord))
	}
	if h, ok := v.heads[e.Seq]; ok {
		if v.matched == nil {
			v.matched = make(map[int64]bool)
		}
		v.matched[e.Seq] = true
		if e.Hash != h {
			rep.problem(e.Seq, "hash differs from the signed checkpoint's head: the log was rewritten at or before this seq")
		}
	}
	if e.Seq > v.last.seq {
		v.last = head{seq: e.Seq, hash: e.Hash}
	}
	rep.Head = v.last.hash
}

// ruleOf returns err's text without the sentinel's own prefix, on one line, for a Problem's
// Rule.
func ruleOf(err, sentinel error) string {
	s := strings.ReplaceAll(err.Error(), sentinel.Error()+": ", "")
	return strings.ReplaceAll(s, "\n", "; ")
}

// sortProblems orders problems by seq, keeping the order found within one seq.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Seq, b.Seq) })
}
