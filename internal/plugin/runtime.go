package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/capgate/capgate/internal/lock"
	"github.com/capgate/capgate/manifest"
)

// ErrManifestMismatch is returned when a running plugin reports a manifest other than the one
// installed: the running process cannot widen what was reviewed.
var ErrManifestMismatch = errors.New("the plugin reports a manifest other than the installed one")

// EnvReportManifest is set to "1" when capgate starts a plugin only to ask for its manifest:
// the plugin writes its manifest (JSON) to standard output and exits.
const EnvReportManifest = "CAPGATE_REPORT_MANIFEST"

// VerifyRuntime compares the manifest a running plugin reports with the installed one, as
// canonical bytes, signature included. Anything else is refused before the plugin serves.
func VerifyRuntime(installed lock.Entry, reported []byte) error {
	doc, err := manifest.Parse(reported)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", installed.AppID, ErrManifestMismatch, err)
	}
	if !bytes.Equal(doc.Raw(), installed.Manifest) {
		return fmt.Errorf("%s: %w", installed.AppID, ErrManifestMismatch)
	}
	return nil
}

// ReportedManifest runs the plugin command with EnvReportManifest=1 and returns what it writes
// to standard output, at most manifest.MaxManifestBytes.
func ReportedManifest(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(cmd.Environ(), EnvReportManifest+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, manifest.MaxManifestBytes+1))
	waitErr := cmd.Wait()
	if readErr != nil {
		return nil, readErr
	}
	if waitErr != nil {
		return nil, fmt.Errorf("plugin exited: %w", waitErr)
	}
	if len(out) > manifest.MaxManifestBytes {
		return nil, fmt.Errorf("plugin reported more than %d bytes", manifest.MaxManifestBytes)
	}
	return out, nil
}
