package mcp

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The SDK's servers log only warnings and errors into capgate's log, with the attributes
// and groups added to the logger kept: a stateless request's session open and close at INFO
// never reach it.
func TestSDKLoggerKeepsWarnings(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("part", "mcp").WithGroup("g")
	l.Info("server session connected")
	l.Debug("a detail")
	l.Warn("a warning", "k", 1)
	l.Error("an error")
	out := buf.String()
	if strings.Contains(out, "session connected") || strings.Contains(out, "a detail") {
		t.Errorf("an INFO or DEBUG record passed: %s", out)
	}
	if !strings.Contains(out, "a warning") || !strings.Contains(out, "g.k=1") || !strings.Contains(out, "part=mcp") || !strings.Contains(out, "an error") {
		t.Errorf("a warning or an error was lost, or its attributes: %s", out)
	}
}
