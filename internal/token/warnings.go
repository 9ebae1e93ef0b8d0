package token

import (
	"encoding/json"
	"fmt"
)

// Warnings says where the constraints do less than they may seem to, for the person or the
// operator asking for a token: a command deny-list without an allow-list, which is a
// convenience and not a bound, and allow-list entries naming programs that every command
// constraint refuses. Each warning names the field, never the value. None is an error: the
// token is valid as it is.
func (c Constraints) Warnings() []string {
	var out []string
	if len(c.AllowedCommands) == 0 && (len(c.DeniedCommands) > 0 || len(c.DeniedPatterns) > 0) {
		out = append(out, "only a deny-list of commands is given (denied_commands, denied_patterns): it refuses the programs it names, "+
			"through the wrappers capgate reads, and cannot see what any other program does (a copy of a denied program under another "+
			"name, a program that deletes or runs others by an option capgate does not know); allowed_commands is the strong form")
	}
	for i, e := range c.AllowedCommands {
		r, ok := parseAllowRule(e)
		if !ok {
			continue
		}
		if k := programKey(r.program); interpreters[k] || runners[k] {
			out = append(out, fmt.Sprintf("allowed_commands[%d] names a shell, an interpreter or a program that runs others, "+
				"which every command constraint refuses: it allows nothing", i))
		}
	}
	return out
}

// RequestWarnings returns the Warnings of the constraints a token request or derivation
// gives as JSON (the token document's names: allowed_paths, allowed_commands,
// denied_commands, denied_patterns), added to those of parent, the wire form of the token
// derived from ("" for a request) as a derivation adds them. The parent is read without its
// signature being checked: the warnings are advice, the gateway decides. Constraints that do
// not parse give no warning; the gateway refuses them.
func RequestWarnings(constraints []byte, parent string) []string {
	var c struct {
		AllowedPaths    []string `json:"allowed_paths"`
		AllowedCommands []string `json:"allowed_commands"`
		DeniedCommands  []string `json:"denied_commands"`
		DeniedPatterns  []string `json:"denied_patterns"`
	}
	if len(constraints) > 0 && json.Unmarshal(constraints, &c) != nil {
		return nil
	}
	cc := Constraints{AllowedPaths: c.AllowedPaths, AllowedCommands: c.AllowedCommands, DeniedCommands: c.DeniedCommands, DeniedPatterns: c.DeniedPatterns}
	if parent != "" {
		if p, err := Parse(parent); err == nil {
			if len(cc.AllowedCommands) == 0 {
				cc.AllowedCommands = p.Constraints.AllowedCommands
			}
			cc.DeniedCommands = append(cc.DeniedCommands, p.Constraints.DeniedCommands...)
			cc.DeniedPatterns = append(cc.DeniedPatterns, p.Constraints.DeniedPatterns...)
		}
	}
	return cc.Warnings()
}
