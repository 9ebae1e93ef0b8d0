package yamljson

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScratchCorpusTiming(t *testing.T) {
	dir := os.Getenv("CORPUS")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(string(b), "\n")
		if len(lines) < 2 {
			continue
		}
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		data, err := strconv.Unquote(s)
		if err != nil {
			t.Logf("unquote %s: %v", f, err)
			continue
		}
		start := time.Now()
		done := make(chan struct{})
		go func() {
			Convert([]byte(data))
			close(done)
		}()
		select {
		case <-done:
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Logf("SLOW %v %s: %q", d, filepath.Base(f), data)
			}
		case <-time.After(5 * time.Second):
			t.Logf("HANG %s: %q", filepath.Base(f), data)
		}
	}
}
