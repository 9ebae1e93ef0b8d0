package yamljson

import (
	"os"
	"strings"
	"testing"
)

func TestScratchTry(t *testing.T) {
	in := os.Getenv("TRY")
	if in == "" {
		t.Skip()
	}
	for _, s := range strings.Split(in, "@@") {
		s = strings.ReplaceAll(s, `\n`, "\n")
		s = strings.ReplaceAll(s, `\t`, "\t")
		out, err := Convert([]byte(s))
		t.Logf("%q => %s | %v", s, out, err)
	}
}
