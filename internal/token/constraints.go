package token

import (
	"time"
)

// Input is what Constraints.Check needs of one call. Which params are paths and which is a
// command is the caller's to say (from the capability's declaration); the token does not
// guess from names.
type Input struct {
	// Permission is the permission the call needs; the condition sees it.
	Permission string
	// Params are the call's params as decoded JSON (encoding/json into map[string]any).
	Params map[string]any
	// PathParams names the top-level params that are filesystem paths. Each may be a string
	// or an array of strings; one that is absent is not checked, one of another type is
	// refused.
	PathParams []string
	// CommandParam names the top-level param that is a command line, if any.
	CommandParam string
	// Dir is the absolute folder relative paths are resolved against; when empty, a
	// relative path is refused.
	Dir string
	// Now is the time of the call; the condition sees it.
	Now time.Time
}

// The rules Check reports, naming the constraint that refused. Command syntax refusals report
// the ErrCommand error's text, which names the rule and never the command.
const (
	RuleAllowedPaths    = "allowed_paths"
	RuleAllowedCommands = "allowed_commands"
	RuleDeniedCommands  = "denied_commands"
	RuleDeniedPatterns  = "denied_patterns"
	RuleCondition       = "condition"
	RuleCommandParam    = "command: not a string"
)

// OnParams reports whether any constraint reads the call's params (paths, commands, the
// condition); when none does, Check allows every call.
func (c Constraints) OnParams() bool {
	return len(c.AllowedPaths) > 0 || len(c.AllowedCommands) > 0 || len(c.DeniedCommands) > 0 ||
		len(c.DeniedPatterns) > 0 || c.Condition != ""
}

// Check reports whether the constraints allow the call, and when they do not, which rule
// refused (one of the Rule constants or an ErrCommand text). Check does not count uses
// (MaxUses is the store's) and does not check the permission is covered (Covers).
//
// Paths are checked when AllowedPaths is not empty: every path param must resolve (see
// ResolvePath) to a path one pattern matches. The command is checked when any command list is
// not empty: it must split (see SplitCommand), no program it reaches may be denied, and
// every program it reaches must be allowed when AllowedCommands is not empty. The condition,
// when set, must evaluate to true.
func (c Constraints) Check(in Input) (ok bool, rule string) {
	if len(c.AllowedPaths) > 0 {
		for _, name := range in.PathParams {
			v, present := in.Params[name]
			if !present {
				continue
			}
			var paths []string
			switch v := v.(type) {
			case string:
				paths = []string{v}
			case []any:
				for _, p := range v {
					s, isStr := p.(string)
					if !isStr {
						return false, RuleAllowedPaths
					}
					paths = append(paths, s)
				}
			default:
				return false, RuleAllowedPaths
			}
			for _, p := range paths {
				if !pathAllowed(c.AllowedPaths, p, in.Dir) {
					return false, RuleAllowedPaths
				}
			}
		}
	}
	if in.CommandParam != "" && (len(c.AllowedCommands) > 0 || len(c.DeniedCommands) > 0 || len(c.DeniedPatterns) > 0) {
		if v, present := in.Params[in.CommandParam]; present {
			cmd, isStr := v.(string)
			if !isStr {
				return false, RuleCommandParam
			}
			invs, err := expandCommand(cmd)
			if err != nil {
				return false, err.Error()
			}
			switch {
			case denied(c.DeniedCommands, invs):
				return false, RuleDeniedCommands
			case denied(c.DeniedPatterns, invs):
				return false, RuleDeniedPatterns
			case len(c.AllowedCommands) > 0 && !allowed(c.AllowedCommands, invs):
				return false, RuleAllowedCommands
			}
		}
	}
	if c.Condition != "" && !conditionHolds(c.Condition, in.Params, in.Permission, in.Now) {
		return false, RuleCondition
	}
	return true, ""
}
