package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/capgate/capgate/internal/policy"
	"github.com/capgate/capgate/internal/port"
	"github.com/capgate/capgate/manifest"
	"github.com/capgate/capgate/sdk"
)

// Status is how a capability's suite came out.
type Status string

// The statuses of a Result. Only StatusPassed is a pass; an install refuses a capability whose
// status Failed.
const (
	// StatusPassed: every case of the suite for the capability's method came out as expected.
	StatusPassed Status = "passed"
	// StatusFailed: a case did not, the provider's fault; Case and Reason say which and why.
	StatusFailed Status = "failed"
	// StatusSuiteError: the suite could not be run against the capability, and the provider
	// was not asked, or not fully: the suite is not in the kit index or has no file, its file
	// breaks the format, a case's params do not fit the capability's parameters schema, it
	// has no case for the capability's method, or it is of another port. The host's (or the
	// manifest's) fault, not a pass either.
	StatusSuiteError Status = "suite_error"
	// StatusNotRun: the capability may change something (side_effects above read) and has no
	// dry run, so no case can be run without letting it. Neither a pass nor a failure: it is
	// untested, and shown as such.
	StatusNotRun Status = "not_run"
	// StatusNoSuite: the capability declares no conformance_suite. Nothing was claimed, and
	// nothing is tested.
	StatusNoSuite Status = "no_suite"
)

var statuses = []Status{StatusPassed, StatusFailed, StatusSuiteError, StatusNotRun, StatusNoSuite}

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	for _, v := range statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Passed reports whether s is StatusPassed.
func (s Status) Passed() bool { return s == StatusPassed }

// Failed reports whether a capability of this status claims a suite it does not pass:
// StatusFailed or StatusSuiteError. An install or upgrade is refused for it. StatusNotRun and
// StatusNoSuite are neither passed nor failed.
func (s Status) Failed() bool { return s == StatusFailed || s == StatusSuiteError }

// Result is the outcome of one capability's suite.
type Result struct {
	Capability string `json:"capability"`      // the capability's id
	Suite      string `json:"suite,omitempty"` // its conformance_suite; empty for StatusNoSuite
	Status     Status `json:"status"`
	// Case is the name of the case that failed (StatusFailed, and StatusSuiteError when a
	// case's params were at fault); empty otherwise.
	Case string `json:"case,omitempty"`
	// Reason says why a capability did not pass: a field path and the rule, in the host's own
	// words, at most MaxReasonBytes. Empty for StatusPassed.
	Reason string `json:"reason,omitempty"`
	// Cases is how many cases passed.
	Cases int `json:"cases"`
	// DryRun is set when the cases ran as dry runs.
	DryRun bool `json:"dry_run,omitempty"`
	// At is when the run of this capability started; ElapsedMS how long it took.
	At        time.Time `json:"at"`
	ElapsedMS int64     `json:"elapsed_ms"`
}

// String returns "ID: STATUS", with the case and the reason when there are any.
func (r Result) String() string {
	var b strings.Builder
	b.WriteString(r.Capability)
	b.WriteString(": ")
	b.WriteString(string(r.Status))
	if r.Case != "" {
		b.WriteString(" at case ")
		b.WriteString(r.Case)
	}
	if r.Reason != "" {
		b.WriteString(": ")
		b.WriteString(r.Reason)
	}
	return b.String()
}

// Options tunes Run. A nil *Options is the zero Options.
type Options struct {
	// CaseTimeout bounds each case's call; zero, or more than CaseTimeout, means CaseTimeout.
	// A capability's timeout_ms lowers it further.
	CaseTimeout time.Duration
	// Now tells the time of a result (nil: time.Now).
	Now func() time.Time
}

// ErrUnknownCapability is wrapped by Run's error for a capability id the handler's manifest
// does not declare, and by Save's for a result of one.
var ErrUnknownCapability = errors.New("not a capability of the app")

// Run runs the conformance suite of each capability named, or of every capability of h's
// manifest when none is, against h, and returns a Result for each, in the order asked. The
// capabilities' declarations are read from h.Manifest(), which for a provider process is the
// installed manifest, not the provider's word; their suites are loaded from suites (a nil
// registry lists none, so every suite is a StatusSuiteError).
//
// Each case is one call of h.Invoke, with a context carrying an sdk.Report (a dry run when
// the capability declares dry_run) and a deadline of the case timeout; when h is an
// sdk.ParamValidator, its check comes first, as at the gateway, and a refusal is an
// invalid_params error. A call that has not returned by its deadline fails the case; a
// handler that ignores the cancellation is left behind, never waited for (a provider process
// that does so is killed by its supervisor). A panic fails the case. The first case that
// fails ends the capability's run.
//
// The error is for a fault, never a failed suite: ErrUnknownCapability (wrapped, naming the
// argument's index) for an id the manifest lacks, a nil handler or manifest, or ctx's error
// when ctx ends the run; then the results of the capabilities finished so far are returned
// with it.
func Run(ctx context.Context, h sdk.Handler, suites *port.Registry, opts *Options, capabilityIDs ...string) ([]Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.CaseTimeout <= 0 || o.CaseTimeout > CaseTimeout {
		o.CaseTimeout = CaseTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if h == nil || h.Manifest() == nil {
		return nil, errors.New("conformance: no handler or no manifest")
	}
	doc := h.Manifest()
	m := doc.Manifest()
	var caps []*manifest.Capability
	if len(capabilityIDs) == 0 {
		for i := range m.Capabilities {
			caps = append(caps, &m.Capabilities[i])
		}
	}
	for i, id := range capabilityIDs {
		c := m.Capability(id)
		if c == nil {
			return nil, fmt.Errorf("conformance: capabilities[%d]: %w", i, ErrUnknownCapability)
		}
		caps = append(caps, c)
	}
	r := &runner{ctx: ctx, h: h, doc: doc, suites: suites, o: o, loaded: map[string]loaded{}}
	out := make([]Result, 0, len(caps))
	for _, c := range caps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		res, err := r.capability(c)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// runner is one Run: its handler and the suites it has loaded, each once.
type runner struct {
	ctx    context.Context
	h      sdk.Handler
	doc    *manifest.Document
	suites *port.Registry
	o      Options
	loaded map[string]loaded
}

type loaded struct {
	s   *port.Suite
	err error
}

// capability runs c's suite. Its error is ctx's, when ctx ended the run.
func (r *runner) capability(c *manifest.Capability) (Result, error) {
	start := r.o.Now()
	res := Result{Capability: c.ID, Suite: c.ConformanceSuite, At: start}
	err := r.run(c, &res)
	res.ElapsedMS = r.o.Now().Sub(start).Milliseconds()
	res.Reason = bounded(res.Reason)
	return res, err
}

func (r *runner) run(c *manifest.Capability, res *Result) error {
	if c.ConformanceSuite == "" {
		res.Status, res.Reason = StatusNoSuite, "the capability declares no conformance_suite"
		return nil
	}
	suitePort, suiteMajor, _, ok := port.SplitSuite(c.ConformanceSuite)
	if !ok {
		res.Status, res.Reason = StatusSuiteError, "conformance_suite: must be conformance/<port>/v<major>/<suite>"
		return nil
	}
	method, ok := methodOf(c, suitePort, suiteMajor)
	if !ok {
		res.Status, res.Reason = StatusSuiteError, "conformance_suite: must be a suite of the port and major the capability implements"
		return nil
	}
	suite, err := r.suite(c.ConformanceSuite)
	if err != nil {
		res.Status = StatusSuiteError
		var fe *port.FileError
		switch {
		case errors.Is(err, port.ErrSuiteNotFound):
			res.Reason = "conformance_suite: not in the host's kit index, or listed without a file"
		case errors.As(err, &fe):
			// The file's first problem only, and a note when there are more: a status has
			// room for one.
			res.Reason = "conformance_suite: " + fe.Error()
			if _, single := err.(*port.FileError); !single {
				res.Reason += " (and more problems)"
			}
		default: // the host's folder itself cannot be read
			res.Reason = "conformance_suite: " + err.Error()
		}
		return nil
	}
	var cases []int // indices in the suite
	for i, k := range suite.Cases {
		if k.Method == method {
			cases = append(cases, i)
		}
	}
	if len(cases) == 0 {
		res.Status, res.Reason = StatusSuiteError, "the suite has no case for the method "+method
		return nil
	}
	// What the host knows of the method holds the capability's declarations first, whether
	// or not its calls can be run: a write with no dry run that claims an undo it does not
	// have fails as one that runs does.
	for _, i := range cases {
		if why := declared(c, suite.Cases[i].Expect); why != "" {
			res.Status, res.Case, res.Reason = StatusFailed, suite.Cases[i].Name, why
			return nil
		}
	}
	switch {
	case c.DryRun:
		res.DryRun = true
	case c.SideEffects.Valid() && c.SideEffects.Rank() <= manifest.SideEffectRead.Rank():
	default:
		res.Status, res.Reason = StatusNotRun, "not run: no dry run, and the capability's side_effects "+string(c.SideEffects)+" is above read"
		if !c.SideEffects.Valid() {
			res.Reason = "not run: no dry run, and the capability's side_effects is no known value"
		}
		return nil
	}
	returns := r.doc.ReturnsSchema(c.ID)
	if returns == nil {
		res.Status, res.Reason = StatusFailed, "returns: the capability's returns schema does not compile"
		return nil
	}
	timeout := r.o.CaseTimeout
	if c.TimeoutMS > 0 && time.Duration(c.TimeoutMS)*time.Millisecond < timeout {
		timeout = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	for _, i := range cases {
		k := suite.Cases[i]
		at := "cases[" + strconv.Itoa(i) + "]"
		// The suite's params are held to the capability's schema first: params that do not
		// fit it test the suite, not the provider.
		if err := sdk.DefaultValidateParams(r.doc, c.ID, k.Params); err != nil {
			res.Status, res.Case = StatusSuiteError, k.Name
			res.Reason = at + ".params: do not fit the capability's parameters schema"
			var se *sdk.Error
			if errors.As(err, &se) && len(se.Problems) > 0 {
				p := se.Problems[0]
				res.Reason = joinPath(at+".params", p.Path) + ": " + p.Rule + " (the suite's params do not fit the capability's parameters schema)"
			}
			return nil
		}
		reason, err := r.runCase(c, k, res.DryRun, timeout, returns)
		if err != nil {
			return err
		}
		if reason != "" {
			res.Status, res.Case, res.Reason = StatusFailed, k.Name, reason
			return nil
		}
		res.Cases++
	}
	res.Status = StatusPassed
	return nil
}

func (r *runner) suite(name string) (*port.Suite, error) {
	if l, ok := r.loaded[name]; ok {
		return l.s, l.err
	}
	s, err := r.suites.Suite(name)
	r.loaded[name] = loaded{s, err}
	return s, err
}

// methodOf returns the port method c is tested as: the method its implements names, which
// must be of the suite's port and major; or, for a capability that implements nothing, the
// action of its id.
func methodOf(c *manifest.Capability, suitePort string, suiteMajor int) (string, bool) {
	if c.Implements == "" {
		a := c.ParsedID().Action()
		return a, a != ""
	}
	ref, err := manifest.ParseDefinitionRef(c.Implements)
	if err != nil {
		return "", false
	}
	name := ref.Name()
	dot := strings.LastIndexByte(name, '.') // a definition name has two segments at least
	if name[:dot] != suitePort || int(ref.Version().Major) != suiteMajor {
		return "", false
	}
	return name[dot+1:], true
}

// answer is what a case's call came to.
type answer struct {
	res      sdk.Result
	err      error
	panicked bool
}

// runCase makes case k's call and says why it fails, or "" when it passes. Its error is
// ctx's, when ctx ended the run.
func (r *runner) runCase(c *manifest.Capability, k port.Case, dryRun bool, timeout time.Duration, returns *manifest.Schema) (string, error) {
	report := &sdk.Report{DryRun: dryRun}
	cctx, cancel := context.WithTimeout(r.ctx, timeout)
	defer cancel()
	cctx = sdk.WithReport(cctx, report)
	ic := sdk.InvocationContext{Source: sdk.SourceUser, Timestamp: r.o.Now(), AppID: r.doc.Manifest().AppID}
	// The call runs on a goroutine of its own so that one that ignores its deadline is left
	// behind, not waited for; the channel is buffered so that it can still finish.
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- answer{panicked: true}
			}
		}()
		if v, ok := r.h.(sdk.ParamValidator); ok {
			if err := v.ValidateParams(c.ID, k.Params); err != nil {
				// As at the gateway: any refusal is invalid_params, whatever its type.
				done <- answer{err: &sdk.Error{Code: sdk.CodeInvalidParams}}
				return
			}
		}
		res, err := r.h.Invoke(cctx, c.ID, k.Params, ic)
		done <- answer{res: res, err: err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-cctx.Done():
	}
	if err := r.ctx.Err(); err != nil {
		return "", err
	}
	if cctx.Err() != nil {
		// Late, whatever it answered: a call is held to its deadline, as at the gateway.
		return fmt.Sprintf("did not finish within %d ms", timeout.Milliseconds()), nil
	}
	if a.panicked {
		return "the capability panicked", nil
	}
	if why := checkEffects(report.Effects(), c.SideEffects, dryRun, k.Expect.MaxEffect); why != "" {
		return why, nil
	}
	if a.err != nil {
		code := sdk.AsError(a.err, c.ID).Code
		switch {
		case code == sdk.CodeTimeout:
			return fmt.Sprintf("did not finish within %d ms", timeout.Milliseconds()), nil
		case k.Expect.Error == "":
			return "the call failed with " + codeWord(code) + ", and the case expects success", nil
		case code != k.Expect.Error:
			return "the call failed with " + codeWord(code) + ", and the case expects " + string(k.Expect.Error), nil
		}
		return "", nil
	}
	if k.Expect.Error != "" {
		return "the call succeeded, and the case expects the error " + string(k.Expect.Error), nil
	}
	if !a.res.Success {
		return "result.success: must be true when the call returns no error", nil
	}
	data := []byte(a.res.Data)
	if len(data) == 0 {
		data = []byte("null")
	}
	if err := returns.ValidateJSON(data, "result"); err != nil {
		var ps manifest.Problems
		if errors.As(err, &ps) && len(ps) > 0 {
			why := ps[0].String() + " (the result breaks the capability's returns schema)"
			if len(ps) > 1 {
				why += fmt.Sprintf(", and %d more problems", len(ps)-1)
			}
			return why, nil
		}
		return "result: breaks the capability's returns schema", nil
	}
	return "", nil
}

// checkEffects holds the effects a call reported to the capability's declared side effect,
// to read in a dry run, and to the case's max effect, and says why they fail, or "".
func checkEffects(effects []sdk.Effect, declared manifest.SideEffect, dryRun bool, max manifest.SideEffect) string {
	for i, e := range effects {
		at := "effects[" + strconv.Itoa(i) + "]"
		got := manifest.SideEffect(e.Effect)
		switch {
		case !got.Valid():
			// The provider's own word is not echoed: it is untrusted and unbounded.
			return at + ": not a side_effects value"
		case got.Rank() > declared.Rank():
			return at + ": a " + string(got) + " effect, above the capability's declared side_effects " + string(declared)
		case dryRun && got.Rank() > manifest.SideEffectRead.Rank():
			return at + ": a " + string(got) + " effect in a dry run, where nothing above read may be reported"
		case got.Rank() > max.Rank():
			return at + ": a " + string(got) + " effect, above the case's max_effect " + string(max)
		}
	}
	return ""
}

// codeWord is an error code as the host names it: one of the sdk's codes, never other text a
// provider put there.
func codeWord(c sdk.Code) string {
	switch c {
	case sdk.CodeNotFound, sdk.CodeInvalidParams, sdk.CodeExecutionFailed, sdk.CodePermissionDenied, sdk.CodeTimeout, sdk.CodeAppUnresponsive:
		return string(c)
	}
	return "an unknown error code"
}

// joinPath appends a problem's path inside the params to base.
func joinPath(base, p string) string {
	switch {
	case p == "":
		return base
	case p[0] == '[':
		return base + p
	}
	return base + "." + p
}

// bounded makes s safe to keep and show: printable UTF-8 of at most MaxReasonBytes, cut at a
// character with "…" when longer. Every other character (a control character, a byte that is
// not UTF-8) becomes '?'.
func bounded(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == utf8.RuneError || !unicode.IsPrint(c) {
			c = '?'
		}
		b.WriteRune(c)
		if b.Len() > MaxReasonBytes {
			break
		}
	}
	out := b.String()
	if len(out) <= MaxReasonBytes {
		return out
	}
	cut := MaxReasonBytes - len("…")
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "…"
}

// declared says how c's declarations break what the host knows of its method (a case's
// Expect), "" when they do not: a reversibility above the method's (as capgate reads c's:
// policy.Reversibility), a data class the method touches that c does not declare (a
// declared class covers its sub-classes), a surface requirement c does not declare.
func declared(c *manifest.Capability, e port.Expect) string {
	if e.Reversibility != "" {
		have := policy.Reversibility(c)
		if slices.Index(manifest.Reversibilities, have) < slices.Index(manifest.Reversibilities, e.Reversibility) {
			return "reversibility: the capability is " + string(have) + ", and its method is at most " + string(e.Reversibility)
		}
	}
	for _, dc := range e.DataClasses {
		if !slices.ContainsFunc(c.DataClasses, func(d string) bool { return d == dc || strings.HasPrefix(dc, d+".") }) {
			return "data_classes: the method touches " + dc + ", which the capability does not declare"
		}
	}
	for _, s := range e.Surface {
		if !slices.Contains(c.Surface, s) {
			return "surface: the method needs " + s + " on the approval surface, which the capability does not declare"
		}
	}
	return ""
}
