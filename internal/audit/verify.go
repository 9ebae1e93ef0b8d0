package audit

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgate/capgate/internal/store"
)

// Sources of a Problem: what disagrees with the rules or with the store's log.
const (
	SourceStore    = "store"     // the store's log and checkpoints
	SourceHeadFile = "head_file" // the head file kept beside the store
	SourceMirror   = "mirror"    // the JSON-lines mirror
	SourceWitness  = "witness"   // a witness
	SourceState    = "state"     // the store's other state that only recorded calls make
	SourceExport   = "export"    // an exported file (VerifyExport)
)

// Problem is one rule the log breaks, at the entry (or checkpoint) seq where it shows, and
// the source where it shows (Source* constants).
type Problem struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source"`
	Rule   string `json:"rule"`
}

func (p Problem) String() string {
	s := "seq " + strconv.FormatInt(p.Seq, 10) + ": "
	if p.Source != "" && p.Source != SourceStore && p.Source != SourceExport {
		s += strings.ReplaceAll(p.Source, "_", " ") + ": "
	}
	return s + p.Rule
}

// Compared is one source outside the store that Verify held the log against.
type Compared struct {
	Source   string `json:"source"`   // SourceHeadFile, SourceMirror, SourceWitness
	Location string `json:"location"` // its path or URL
	// Seq is the highest seq it holds (the mirror's highest line, the head file's head, the
	// witness's checkpoint), 0 for none.
	Seq int64 `json:"seq"`
	// CheckpointSeq is the seq of the signed checkpoint it holds, 0 for none.
	CheckpointSeq int64 `json:"checkpoint_seq"`
}

// Report is what Verify found. Entries up to LastCheckpointSeq are proven by the gateway's
// signature against any change; entries up to KeptSeq are proven against being cut off by a
// head kept outside the store; Warnings say what is beyond either.
type Report struct {
	Entries           int64  `json:"entries"`             // entries read
	Checkpoints       int    `json:"checkpoints"`         // checkpoints read from the store (or the export), valid or not
	LastCheckpointSeq int64  `json:"last_checkpoint_seq"` // seq of the last signed checkpoint, from any source, that verified; 0 for none
	KeptSeq           int64  `json:"kept_seq"`            // highest seq held outside the store (head file, witness); 0 for none
	Head              string `json:"head"`                // hash of the last entry read, "" for an empty log
	HeadSeq           int64  `json:"head_seq"`            // seq of the last entry read
	// Compared lists the sources outside the store the log was held against.
	Compared []Compared `json:"compared"`
	// Problems are failures: the log was altered, or the store lost what it acknowledged.
	Problems []Problem `json:"problems"`
	// ProblemsOmitted counts problems beyond MaxProblems, not listed.
	ProblemsOmitted int `json:"problems_omitted"`
	// Warnings are facts that are not failures: what could not be proven, and what a crash
	// legitimately leaves (a mirror behind the store).
	Warnings []Problem `json:"warnings"`
}

// OK reports whether Verify found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.ProblemsOmitted == 0 }

func (r *Report) problem(seq int64, source, rule string) {
	if len(r.Problems) >= MaxProblems {
		r.ProblemsOmitted++
		return
	}
	r.Problems = append(r.Problems, Problem{Seq: seq, Source: source, Rule: rule})
}

func (r *Report) warn(seq int64, source, rule string) {
	if len(r.Warnings) < MaxProblems {
		r.Warnings = append(r.Warnings, Problem{Seq: seq, Source: source, Rule: rule})
	}
}

// CallState is the part of a store that only recorded calls and changes make: clients
// (client.add), tokens (request_capability, derive_token: each stored, with the hash of its
// wire form, only after its record is durable) and consent requests. store.Store implements
// it.
type CallState interface {
	ListClients(ctx context.Context) ([]store.Client, error)
	ListTokens(ctx context.Context, live bool, now time.Time) ([]store.Token, error)
	ListConsents(ctx context.Context, state string) ([]store.Consent, error)
}

// VerifyOptions are what VerifyWith holds the store's log against besides its own
// checkpoints. A nil *VerifyOptions holds it against nothing else (Verify).
type VerifyOptions struct {
	// HeadFile is the path of the head file the writers keep beside the store (the gateway's
	// DATA/audit.head). Its absence is a warning (nothing outside the store then says how
	// long the log was); a file that cannot be read or parsed is a problem.
	HeadFile string
	// Mirror is the path of the writers' JSON-lines mirror (the gateway's DATA/audit.jsonl).
	// Its absence is a warning.
	Mirror string
	// Witnesses are asked for the checkpoint each holds; one that cannot be asked is a
	// problem, since what cannot be checked is not proven.
	Witnesses []Witness
	// State, when set, is read before the log: tokens whose issue has no record in the log,
	// and an empty log in a store with clients, tokens or consent requests, are problems.
	State CallState
}

// Verify reads the whole log and its checkpoints from s, page by page, and reports every
// rule they break (VerifyWith with nil options). It proves the log against rewriting up to
// its last checkpoint and says nothing of a cut tail: records and checkpoints deleted
// together leave a shorter log that is consistent by itself. VerifyWith compares the log with
// what is kept outside the store.
func Verify(ctx context.Context, s store.Audit, pub ed25519.PublicKey) (Report, error) {
	return VerifyWith(ctx, s, pub, nil)
}

// VerifyWith reads the whole log and its checkpoints from s, page by page, and reports every
// rule they break, at the seq and in the source where it shows:
//
//   - entries: the seqs run 1, 2, 3, ... with no gap, repeat or reordering; each PrevHash
//     is the Hash of the entry before ("" for seq 1); each Hash is EntryHash of its own
//     PrevHash, Seq and Body; each Body is what DecodeRecord accepts;
//   - checkpoints: each verifies with pub (VerifyCheckpoint); their seqs strictly increase;
//     the entry at each checkpoint's seq exists and its Hash is the checkpoint's head. A
//     checkpoint past the end of the log means entries up to it were deleted;
//   - the head file (opts.HeadFile): the log reaches its seq and has its hash there, and its
//     checkpoint verifies, matches the log and is among the store's checkpoints;
//   - witnesses: the same for the checkpoint each holds;
//   - the mirror: its lines run 1, 2, 3, ... each the store's entry byte for byte (at within
//     the store's millisecond); a line the store lacks, a line that differs, and a gap
//     before its last line are problems; a mirror that ends before the store, or a last
//     line cut short, is what a crash between the store's commit and the mirror's write
//     leaves, a warning (the next writer on the folder writes what is missing);
//   - state (opts.State): every token the gateway issued (stored with its wire hash) has its
//     issue in the log (a record naming it with result "issued"), and an empty log goes with
//     a store without clients, tokens and consent requests.
//
// What stays unproven is in the warnings: entries after the last signed checkpoint, which
// someone who can also rewrite every head kept outside the store could rewrite, and entries
// after the last head kept outside the store, which could be cut.
//
// The head file and the witnesses are read before the log, and the log before the mirror's
// lines are compared, so that a gateway writing meanwhile (store first, then head, then
// mirror) never looks like a cut.
//
// VerifyWith returns an error only when it could not read the store (a store error, ctx
// done) or pub is not an Ed25519 public key; everything found is in the Report.
func VerifyWith(ctx context.Context, s store.Audit, pub ed25519.PublicKey, opts *VerifyOptions) (Report, error) {
	var rep Report
	if len(pub) != ed25519.PublicKeySize {
		return rep, errors.New("audit: verify: public key is not 32 bytes")
	}
	var o VerifyOptions
	if opts != nil {
		o = *opts
	}
	v := chainCheck{rep: &rep, expect: map[int64][]expectation{}, outside: opts != nil}

	if o.State != nil {
		if err := v.readState(ctx, o.State); err != nil {
			return rep, err
		}
	}
	outsideCPs := v.readOutside(ctx, pub, o.Witnesses, o.HeadFile)

	cps, err := s.Checkpoints(ctx)
	if err != nil {
		return rep, fmt.Errorf("audit: verify: read checkpoints: %w", err)
	}
	rep.Checkpoints = len(cps)
	stored := make(map[int64]string, len(cps))
	var prevCP int64
	for i, c := range cps {
		if i > 0 && c.Seq <= prevCP {
			rep.problem(c.Seq, SourceStore, "checkpoint seqs do not strictly increase")
		}
		prevCP = c.Seq
		if err := VerifyCheckpoint(pub, c); err != nil {
			rep.problem(c.Seq, SourceStore, "checkpoint: "+ruleOf(err, ErrBadCheckpoint))
			continue
		}
		stored[c.Seq] = c.Head
		v.add(expectation{seq: c.Seq, hash: c.Head, source: SourceStore, signed: true})
	}
	for _, x := range outsideCPs {
		if h, ok := stored[x.seq]; !ok || h != x.hash {
			rep.problem(x.seq, x.source, "the store lacks the checkpoint at this seq that "+x.holder+" holds: checkpoints were deleted from the store")
		}
	}

	if o.Mirror != "" {
		m, err := openMirrorCheck(o.Mirror, &rep)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.warn(0, SourceMirror, "no mirror at "+o.Mirror+": nothing to compare")
		case err != nil:
			rep.problem(0, SourceMirror, "cannot be read ("+o.Mirror+")")
		default:
			defer m.close()
			v.mirror = m
		}
	}

	if err := v.readLog(ctx, s); err != nil {
		return rep, err
	}
	v.finish()
	sortProblems(rep.Problems)
	return rep, nil
}

// expectation is a seq and hash that something besides the chain says the log has.
type expectation struct {
	seq    int64
	hash   string
	source string // SourceStore (a checkpoint), SourceHeadFile, SourceWitness
	signed bool   // a verified checkpoint, not an unsigned head
	holder string // how a rule names where it is held: "the head file", "the witness URL"
}

// kind names what x is in a rule.
func (x expectation) kind() string {
	if x.signed {
		return "checkpoint"
	}
	return "head"
}

// chainCheck is the entry-by-entry state of a verification: the last entry seen, what is
// expected at which seq, the mirror being compared and the tokens being looked for.
type chainCheck struct {
	rep     *Report
	expect  map[int64][]expectation
	matched map[int64]bool
	last    head // highest seq seen and its hash
	started bool // an entry was seen
	outside bool // the log is being compared with sources outside the store (warnings differ)
	export  bool // the log is an exported file, not a store

	mirror *mirrorCheck

	tokens      map[string]bool // stored token id → its issue was seen
	stateCounts string          // "2 clients, 1 token", "" for none
}

// add expects the log to have x. A signed checkpoint that verified counts towards
// LastCheckpointSeq, and anything held outside the store towards KeptSeq, whether the log
// matches or not: where it does not, that is a problem, and the warnings say nothing more.
func (v *chainCheck) add(x expectation) {
	v.expect[x.seq] = append(v.expect[x.seq], x)
	if x.signed {
		v.rep.LastCheckpointSeq = max(v.rep.LastCheckpointSeq, x.seq)
	}
	if x.source != SourceStore {
		v.rep.KeptSeq = max(v.rep.KeptSeq, x.seq)
	}
}

// outsideCheckpoint checks a checkpoint held outside the store (by a witness or the head
// file) and, when it verifies, expects the log to match it.
func (v *chainCheck) outsideCheckpoint(pub ed25519.PublicKey, c store.Checkpoint, source, location string) (expectation, bool) {
	if err := VerifyCheckpoint(pub, c); err != nil {
		v.rep.problem(c.Seq, source, "checkpoint ("+location+"): "+ruleOf(err, ErrBadCheckpoint))
		return expectation{}, false
	}
	holder := "the witness " + location
	if source == SourceHeadFile {
		holder = "the head file"
	}
	x := expectation{seq: c.Seq, hash: c.Head, source: source, signed: true, holder: holder}
	v.add(x)
	return x, true
}

// readOutside reads what is kept outside the store, the witnesses' checkpoints and then the
// head file ("": none), expecting the log to match each; it returns the expectations of the
// signed checkpoints among them.
func (v *chainCheck) readOutside(ctx context.Context, pub ed25519.PublicKey, ws []Witness, headFile string) []expectation {
	cps := v.readWitnesses(ctx, pub, ws)
	if headFile != "" {
		cps = append(cps, v.readHeadFile(pub, headFile)...)
	}
	return cps
}

// readWitnesses asks each witness for its checkpoint and expects the log to match it; it
// returns their expectations. A witness that cannot be asked is a problem.
func (v *chainCheck) readWitnesses(ctx context.Context, pub ed25519.PublicKey, ws []Witness) []expectation {
	var out []expectation
	for _, w := range ws {
		c, ok, err := w.Latest(ctx)
		cmp := Compared{Source: SourceWitness, Location: w.String()}
		switch {
		case err != nil:
			v.rep.problem(0, SourceWitness, "could not be read ("+w.String()+"): what it holds is not checked")
		case ok:
			cmp.Seq, cmp.CheckpointSeq = c.Seq, c.Seq
			if x, good := v.outsideCheckpoint(pub, c, SourceWitness, w.String()); good {
				out = append(out, x)
			}
		default:
			v.rep.warn(0, SourceWitness, w.String()+" holds no checkpoint yet")
		}
		v.rep.Compared = append(v.rep.Compared, cmp)
	}
	return out
}

// readHeadFile reads the head file and expects the log to match its head and checkpoint; it
// returns the checkpoint's expectation, if any.
func (v *chainCheck) readHeadFile(pub ed25519.PublicKey, path string) []expectation {
	rep := v.rep
	content, err := ReadHeadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		rep.warn(0, SourceHeadFile, "no head file at "+path+": nothing outside the store says how long the log was")
		return nil
	}
	cmp := Compared{Source: SourceHeadFile, Location: path}
	defer func() { rep.Compared = append(rep.Compared, cmp) }()
	if err != nil {
		rep.problem(0, SourceHeadFile, "cannot be read or is damaged ("+ruleOf(err, ErrBadHead)+")")
		return nil
	}
	for _, slot := range content.Damaged {
		rep.warn(0, SourceHeadFile, "slot "+strconv.Itoa(slot)+" does not parse (a write cut short by a crash); the other slot is used")
	}
	h := content.Head
	cmp.Seq, cmp.CheckpointSeq = h.Seq, h.Checkpoint.Seq
	if h.Seq == 0 {
		return nil
	}
	if h.Checkpoint.Seq != h.Seq {
		// The unsigned head says more than the checkpoint; at the same seq, the checkpoint
		// says it all.
		v.add(expectation{seq: h.Seq, hash: h.Hash, source: SourceHeadFile, holder: "the head file"})
	}
	if h.Checkpoint.Seq == 0 {
		return nil
	}
	if x, ok := v.outsideCheckpoint(pub, h.Checkpoint, SourceHeadFile, path); ok {
		return []expectation{x}
	}
	return nil
}

// readState reads the store's state that only recorded calls make.
func (v *chainCheck) readState(ctx context.Context, st CallState) error {
	clients, err := st.ListClients(ctx)
	if err != nil {
		return fmt.Errorf("audit: verify: list clients: %w", err)
	}
	tokens, err := st.ListTokens(ctx, false, time.Now())
	if err != nil {
		return fmt.Errorf("audit: verify: list tokens: %w", err)
	}
	consents, err := st.ListConsents(ctx, "")
	if err != nil {
		return fmt.Errorf("audit: verify: list consent requests: %w", err)
	}
	v.tokens = make(map[string]bool, len(tokens))
	for _, t := range tokens {
		// A token the gateway issued is stored with the hash of its wire form, after its
		// issue is durable in the log; one without (put there by hand) names no call.
		if t.Hash != "" {
			v.tokens[t.ID] = false
		}
	}
	var parts []string
	for _, n := range []struct {
		n        int
		one, any string
	}{{len(clients), "client", "clients"}, {len(tokens), "token", "tokens"}, {len(consents), "consent request", "consent requests"}} {
		switch {
		case n.n == 1:
			parts = append(parts, "1 "+n.one)
		case n.n > 1:
			parts = append(parts, strconv.Itoa(n.n)+" "+n.any)
		}
	}
	v.stateCounts = strings.Join(parts, ", ")
	return nil
}

// readLog reads the store's log a page at a time and checks each entry. When the store has
// no more but the mirror still has lines, it reads the store once more: a writer may have
// appended (and mirrored) since the last page.
func (v *chainCheck) readLog(ctx context.Context, s store.Audit) error {
	from := int64(1)
	retried := false
	for {
		page, err := s.AuditRange(ctx, from, 0, verifyPageSize)
		if err != nil {
			return fmt.Errorf("audit: verify: read entries from seq %d: %w", from, err)
		}
		progressed := false
		for _, e := range page {
			v.entry(e)
			if e.Seq >= from {
				from = e.Seq + 1
				progressed = true
			}
		}
		if len(page) > 0 && !progressed {
			// A store that answers a range with entries before it would loop forever.
			v.rep.problem(from, SourceStore, "store returned entries out of the range asked for")
			return nil
		}
		if len(page) == verifyPageSize {
			retried = false
			continue
		}
		if progressed {
			retried = false
		}
		// The mirror holds a line past what the store gave: the store may have grown since
		// its last page (a writer appends there first), so it is asked once more.
		if v.mirror != nil && !retried && v.mirror.more() {
			retried = true
			continue
		}
		return nil
	}
}

func (v *chainCheck) entry(e store.AuditEntry) {
	rep, src := v.rep, v.source()
	rep.Entries++
	v.started = true
	want := v.last.seq + 1
	switch {
	case e.Seq == want:
		if e.PrevHash != v.last.hash {
			rep.problem(e.Seq, src, "prev_hash is not the hash of entry "+strconv.FormatInt(v.last.seq, 10))
		}
	case e.Seq > want:
		if e.Seq == want+1 {
			rep.problem(want, src, "entry missing")
		} else {
			rep.problem(want, src, "entries "+strconv.FormatInt(want, 10)+" to "+strconv.FormatInt(e.Seq-1, 10)+" missing")
		}
	default:
		rep.problem(e.Seq, src, "entry out of order or repeated (after seq "+strconv.FormatInt(v.last.seq, 10)+")")
	}
	if EntryHash(e.PrevHash, e.Seq, e.Body) != e.Hash {
		rep.problem(e.Seq, src, "hash does not match the entry's body, seq and prev_hash")
	}
	r, err := DecodeRecord(e.Body)
	if err != nil {
		rep.problem(e.Seq, src, "body: "+ruleOf(err, ErrInvalidRecord))
	} else if r.Result == "issued" && r.TokenID != "" && v.tokens != nil {
		if _, ok := v.tokens[r.TokenID]; ok {
			v.tokens[r.TokenID] = true
		}
	}
	for _, x := range v.expect[e.Seq] {
		if v.matched == nil {
			v.matched = make(map[int64]bool)
		}
		v.matched[e.Seq] = true
		switch {
		case e.Hash == x.hash:
		case x.source == SourceStore:
			rep.problem(e.Seq, SourceStore, "hash differs from the signed checkpoint's head: the log was rewritten at or before this seq")
		default:
			rep.problem(e.Seq, x.source, "hash differs from the "+x.kind()+" "+x.holder+" holds: the log was rewritten at or before this seq")
		}
	}
	if v.mirror != nil {
		v.mirror.compare(e)
	}
	if e.Seq > v.last.seq {
		v.last = head{seq: e.Seq, hash: e.Hash}
	}
	rep.Head, rep.HeadSeq = v.last.hash, v.last.seq
}

// source is where the log was read, for a Problem.
func (v *chainCheck) source() string {
	if v.export {
		return SourceExport
	}
	return SourceStore
}

// from names where the log was read, for a rule.
func (v *chainCheck) from() string {
	if v.export {
		return "the file"
	}
	return "the store"
}

// finish reports what is found only at the end: expectations past the log, the mirror's
// remaining lines, tokens without their issue, and what stays unproven.
func (v *chainCheck) finish() {
	rep := v.rep
	last := v.last.seq
	for _, seq := range slices.Sorted(maps.Keys(v.expect)) {
		if v.matched[seq] {
			continue
		}
		for _, x := range v.expect[seq] {
			rule := "no entry at the checkpoint's seq"
			if seq > last {
				rule = "checkpoint past the end of the log (last entry " + strconv.FormatInt(last, 10) + "): entries were deleted"
				if x.source != SourceStore {
					rule = "the log ends at seq " + strconv.FormatInt(last, 10) + " but " + x.holder + " holds a " + x.kind() + " at seq " + strconv.FormatInt(seq, 10) + ": " + rangeAre(last+1, seq) + " missing from " + v.from()
				}
			} else if x.source != SourceStore {
				rule = "no entry at the seq of the " + x.kind() + " " + x.holder + " holds"
			}
			rep.problem(seq, x.source, rule)
		}
	}
	if v.mirror != nil {
		v.mirror.finish(last)
	}
	if v.tokens != nil {
		if !v.started && v.stateCounts != "" {
			rep.problem(1, SourceState, "the log is empty but the store holds "+v.stateCounts+", which only recorded calls and changes make: its records were deleted")
		} else {
			for _, id := range slices.Sorted(maps.Keys(v.tokens)) {
				if !v.tokens[id] {
					rep.problem(0, SourceState, "token "+id+" is in the store but its issue is not in the log: its record was deleted")
				}
			}
		}
	}
	if !v.outside {
		if last > rep.LastCheckpointSeq {
			rep.warn(rep.LastCheckpointSeq+1, SourceStore, "entries "+strconv.FormatInt(rep.LastCheckpointSeq+1, 10)+" to "+strconv.FormatInt(last, 10)+" are after the last checkpoint: their deletion or rewriting could not be detected")
		}
		return
	}
	source, from := v.source(), v.from()
	if last > rep.LastCheckpointSeq {
		rep.warn(rep.LastCheckpointSeq+1, source, rangeAre(rep.LastCheckpointSeq+1, last)+" after the last signed checkpoint: rewritten together with every head kept outside "+from+", they would not show")
	}
	if last > rep.KeptSeq {
		rep.warn(rep.KeptSeq+1, source, rangeAre(rep.KeptSeq+1, last)+" after the last head kept outside "+from+": cut from "+from+", they would not show")
	}
}

// mirrorCheck compares the mirror's lines with the store's entries as Verify reads them.
type mirrorCheck struct {
	rep  *Report
	path string
	f    *os.File
	r    *bufio.Reader
	line int // number of the last line read

	pending *store.AuditEntry // a line read and not yet compared
	pendAt  int               // its line number
	eof     bool

	lastSeq  int64 // seq of the last line compared or passed
	gapFrom  int64 // first seq the mirror lacks in a run not yet reported, 0 for none
	gapTo    int64
	cmpIndex int // index of the mirror's Compared
}

func openMirrorCheck(path string, rep *Report) (*mirrorCheck, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rep.Compared = append(rep.Compared, Compared{Source: SourceMirror, Location: path})
	return &mirrorCheck{rep: rep, path: path, f: f, r: bufio.NewReaderSize(f, 64<<10), cmpIndex: len(rep.Compared) - 1}, nil
}

func (m *mirrorCheck) close() { m.f.Close() }

// more reads the next entry line into pending when there is none, reporting lines that are
// not entry lines, and says whether one is pending.
func (m *mirrorCheck) more() bool {
	for m.pending == nil && !m.eof {
		b, complete, err := readLine(m.r)
		if err != nil {
			m.eof = true
			if !errors.Is(err, io.EOF) {
				m.rep.problem(0, SourceMirror, "read failed after line "+strconv.Itoa(m.line))
			}
			break
		}
		m.line++
		at := "line " + strconv.Itoa(m.line) + ": "
		if !complete {
			// The last bytes of the file with no newline: a write cut short.
			m.eof = true
			m.rep.warn(0, SourceMirror, at+"the last line is incomplete (a write cut short by a crash); the next writer on the folder replaces it")
			break
		}
		if b == nil {
			m.rep.problem(0, SourceMirror, at+"longer than "+strconv.Itoa(MaxLineBytes)+" bytes")
			continue
		}
		pl, err := parseLine(b)
		switch {
		case err != nil:
			m.rep.problem(0, SourceMirror, at+lineRule(err))
			continue
		case pl.checkpoint.Seq != 0:
			m.rep.problem(pl.checkpoint.Seq, SourceMirror, at+"a checkpoint line; the mirror holds entries only")
			continue
		}
		e := pl.entry
		m.pending, m.pendAt = &e, m.line
		m.rep.Compared[m.cmpIndex].Seq = max(m.rep.Compared[m.cmpIndex].Seq, e.Seq)
	}
	return m.pending != nil
}

// lineRule is a parseLine error as a Problem's rule.
func lineRule(err error) string {
	if errors.Is(err, ErrBadCheckpoint) {
		return "checkpoint: " + ruleOf(err, ErrBadCheckpoint)
	}
	return ruleOf(err, ErrBadLine)
}

// compare holds the store's entry e against the mirror's lines.
func (m *mirrorCheck) compare(e store.AuditEntry) {
	for m.more() {
		p := m.pending
		at := "line " + strconv.Itoa(m.pendAt) + ": "
		switch {
		case p.Seq <= m.lastSeq:
			m.rep.problem(p.Seq, SourceMirror, at+"entry out of order or repeated (after seq "+strconv.FormatInt(m.lastSeq, 10)+")")
			m.pending = nil
			continue
		case p.Seq < e.Seq:
			// The store skipped this seq (the chain check reports the gap); the mirror has it.
			m.rep.problem(p.Seq, SourceMirror, at+"holds entry "+strconv.FormatInt(p.Seq, 10)+", which the store lacks: it was deleted from the store")
			m.lastSeq = p.Seq
			m.pending = nil
			continue
		case p.Seq > e.Seq:
			m.missing(e.Seq)
			return
		}
		m.flushGap()
		switch {
		case p.Hash != e.Hash:
			m.rep.problem(e.Seq, SourceMirror, at+"hash differs from the store's entry")
		case p.PrevHash != e.PrevHash:
			m.rep.problem(e.Seq, SourceMirror, at+"prev_hash differs from the store's entry")
		case string(p.Body) != string(e.Body):
			m.rep.problem(e.Seq, SourceMirror, at+"record differs from the store's entry")
		case p.At.Sub(e.At).Abs() >= time.Millisecond:
			m.rep.problem(e.Seq, SourceMirror, at+"at differs from the store's entry")
		}
		m.lastSeq = p.Seq
		m.pending = nil
		return
	}
	m.missing(e.Seq)
}

// missing notes that the mirror lacks the store's entry seq.
func (m *mirrorCheck) missing(seq int64) {
	if m.gapFrom == 0 {
		m.gapFrom = seq
	}
	m.gapTo = seq
	m.lastSeq = max(m.lastSeq, seq)
}

// flushGap reports a run of entries the mirror lacks before a line it has: a crash leaves the
// mirror behind the store, never with a hole, so a hole is lines deleted from the mirror.
func (m *mirrorCheck) flushGap() {
	if m.gapFrom == 0 {
		return
	}
	m.rep.problem(m.gapFrom, SourceMirror, rangeAre(m.gapFrom, m.gapTo)+" missing from the mirror before line "+strconv.Itoa(m.pendAt)+": lines were deleted from it")
	m.gapFrom, m.gapTo = 0, 0
}

// finish reports what is left once the store's log is read: lines past the store's last
// entry, or a mirror behind the store.
func (m *mirrorCheck) finish(last int64) {
	var past []int64
	firstLine := 0
	for m.more() {
		if firstLine == 0 {
			firstLine = m.pendAt
		}
		past = append(past, m.pending.Seq)
		if len(past) > MaxProblems {
			past = past[:MaxProblems]
		}
		m.pending = nil
	}
	if len(past) > 0 {
		m.flushGap()
		m.rep.problem(past[0], SourceMirror, "line "+strconv.Itoa(firstLine)+" on: the mirror holds entries past the store's last ("+strconv.FormatInt(last, 10)+"), from seq "+strconv.FormatInt(past[0], 10)+": they were deleted from the store")
		return
	}
	if m.gapFrom != 0 {
		m.rep.warn(m.gapFrom, SourceMirror, rangeAre(m.gapFrom, m.gapTo)+" not in the mirror yet: it is written after the store, and a crash between the two leaves this; the next writer on the folder adds them")
	}
}

// rangeAre names a run of entries and its verb for a rule: "entry 7 is", "entries 7 to 9 are".
func rangeAre(from, to int64) string {
	if from == to {
		return "entry " + strconv.FormatInt(from, 10) + " is"
	}
	return "entries " + strconv.FormatInt(from, 10) + " to " + strconv.FormatInt(to, 10) + " are"
}

// readLine reads one line without its newline. complete is false for a last line with no
// newline; a line longer than MaxLineBytes is returned as nil (and read past).
func readLine(r *bufio.Reader) (line []byte, complete bool, err error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, true, nil
			}
			return buf[:len(buf)-1], true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 && !tooLong {
				return nil, false, io.EOF
			}
			return buf, false, nil
		default:
			return nil, false, err
		}
	}
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
