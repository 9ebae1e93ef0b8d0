package token

import (
	"time"
)

// Input is what Constraints.Check needs of one call. Which params are paths, commands and
// command input is the capability's to say, in its parameters schema (the manifest's param
// classes): the caller finds those values wherever they sit in the params and passes them
// here. The token never guesses from names.
type Input struct {
	// Permission is the permission the call needs; the condition sees it.
	Permission string
	// Params are the call's params as decoded JSON (encoding/json into map[string]any); the
	// condition sees them.
	Params map[string]any
	// Paths are the call's path values (paths and cwds), each with its location.
	Paths []Value
	// Commands are the call's command lines, each with the cwd it runs in, if the params
	// name one.
	Commands []Command
	// CommandInput: the call carries input for a program that is already running (a
	// terminal's write_input), which no constraint can read.
	CommandInput bool
	// Unclassified: the capability's params are not all classified, or this call carries a
	// value its schema does not classify, or a command whose cwd is ambiguous. A token with
	// path or command constraints refuses it: what it cannot see, it cannot check.
	Unclassified bool
	// Dir is the absolute folder relative paths (and commands without a cwd) are resolved
	// against; when empty, a relative path is refused.
	Dir string
	// Now is the time of the call; the condition sees it.
	Now time.Time
}

// Value is one value of the params: its location (a JSON pointer) and its text.
type Value struct {
	Pointer string
	Text    string
}

// Command is a command line of the params and the cwd value it runs in; a nil Cwd runs in
// Input.Dir.
type Command struct {
	Value
	Cwd *Value
}

// Verdict is what Check decided. Its zero value refuses.
type Verdict struct {
	// OK: the constraints allow the call.
	OK bool
	// Rule names the constraint or rule that refused (one of the Rule constants or an
	// ErrCommand text); "" when OK.
	Rule string
	// Resolved are the path values Check matched against allowed_paths, each with the
	// absolute, link-resolved path it matched: what the provider must open, so that what
	// was checked is what is opened. Empty when the token has no allowed_paths.
	Resolved []Value
}

// The rules Check reports, naming the constraint that refused. Command syntax refusals report
// the ErrCommand error's text, which names the rule and never the command; the programs a
// command constraint refuses are named by the rules of programs.go.
const (
	RuleAllowedPaths    = "allowed_paths"
	RuleAllowedCommands = "allowed_commands"
	RuleDeniedCommands  = "denied_commands"
	RuleDeniedPatterns  = "denied_patterns"
	RuleCondition       = "condition"
	// RuleUnclassified refuses a capability whose params are not all classified under a
	// token with path or command constraints.
	RuleUnclassified = "params: not every param is classified as a path, a command or text, so the token's path and command constraints cannot all be checked"
	// RuleCommandInput refuses input to a running program under such a token.
	RuleCommandInput = "command-input: input to a running program cannot be checked by the token's path and command constraints"
)

// OnParams reports whether any constraint reads the call's params (paths, commands, the
// condition); when none does, Check allows every call.
func (c Constraints) OnParams() bool {
	return c.onPathsOrCommands() || c.Condition != ""
}

// onCommands reports whether a command constraint is set.
func (c Constraints) onCommands() bool {
	return len(c.AllowedCommands) > 0 || len(c.DeniedCommands) > 0 || len(c.DeniedPatterns) > 0
}

func (c Constraints) onPathsOrCommands() bool {
	return len(c.AllowedPaths) > 0 || c.onCommands()
}

func refuse(rule string) Verdict { return Verdict{Rule: rule} }

// Check reports whether the constraints allow the call, and when they do not, which rule
// refused. Check does not count uses (MaxUses is the store's) and does not check the
// permission is covered (Covers).
//
// A token with path or command constraints refuses a call that is Unclassified or carries
// CommandInput. With AllowedPaths, every path value must resolve (see ResolvePath) to a path
// one pattern matches, and Verdict.Resolved says where each led; every command's cwd and the
// words of every program it runs that can name a path are checked the same way (see
// commandPaths), and shells and interpreters are refused, since the paths their code opens
// cannot be seen. With a command list, every command must split (see SplitCommand), no
// program it reaches may be denied, every program it reaches must be allowed when
// AllowedCommands is not empty, and the programs and options of programs.go are refused. The
// condition, when set, must evaluate to true.
func (c Constraints) Check(in Input) Verdict {
	paths, cmds := len(c.AllowedPaths) > 0, c.onCommands()
	var v Verdict
	if paths || cmds {
		switch {
		case in.Unclassified:
			return refuse(RuleUnclassified)
		case in.CommandInput:
			return refuse(RuleCommandInput)
		}
	}
	var pats []pattern
	if paths {
		pats = resolvedPatterns(c.AllowedPaths)
		for _, p := range in.Paths {
			abs, ok := matchPath(pats, p.Text, in.Dir)
			if !ok {
				return refuse(RuleAllowedPaths)
			}
			v.Resolved = append(v.Resolved, Value{Pointer: p.Pointer, Text: abs})
		}
	}
	if paths || cmds {
		for _, cmd := range in.Commands {
			if rule := c.checkCommand(cmd, pats, in.Dir); rule != "" {
				return refuse(rule)
			}
		}
	}
	if c.Condition != "" && !conditionHolds(c.Condition, in.Params, in.Permission, in.Now) {
		return refuse(RuleCondition)
	}
	v.OK = true
	return v
}

// checkCommand checks one command line; pats are the resolved allowed_paths, nil when the
// token has none.
func (c Constraints) checkCommand(cmd Command, pats []pattern, dir string) string {
	invs, err := expandCommand(cmd.Text)
	if err != nil {
		return err.Error()
	}
	paths := len(c.AllowedPaths) > 0
	switch {
	case denied(c.DeniedCommands, invs):
		return RuleDeniedCommands
	case denied(c.DeniedPatterns, invs):
		return RuleDeniedPatterns
	}
	for _, inv := range invs {
		if rule := programRule(inv, paths); rule != "" {
			return rule
		}
		if len(c.AllowedCommands) == 0 {
			if rule := tailRule(inv); rule != "" {
				return rule
			}
		}
	}
	if len(c.AllowedCommands) > 0 && !allowed(c.AllowedCommands, invs) {
		return RuleAllowedCommands
	}
	if paths {
		cwd := dir
		if cmd.Cwd != nil {
			abs, ok := matchPath(pats, cmd.Cwd.Text, dir)
			if !ok {
				return RuleAllowedPaths
			}
			cwd = abs
		}
		if !commandPaths(pats, invs, cwd, MaxPathLookups) {
			return RuleAllowedPaths
		}
	}
	return ""
}
