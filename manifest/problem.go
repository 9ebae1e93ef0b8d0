package manifest

import (
	"strconv"
	"strings"
)

// Problem is one way a manifest breaks a rule: where (an index-based field path such as
// "capabilities[3].parameters", empty for the document itself) and which rule. A Problem
// never holds the offending value: manifests are untrusted input, shown in terminals and
// logs.
type Problem struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// String returns "path: rule".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Rule
	}
	return p.Path + ": " + p.Rule
}

// Problems is every problem found in one manifest. As an error it reads as one line per problem.
type Problems []Problem

// Error implements error.
func (ps Problems) Error() string {
	var b strings.Builder
	b.WriteString("invalid manifest: ")
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// field joins a member name to a path.
func field(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index joins an array index to a path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
