package providers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/capgate/capgate/internal/sandbox"
)

// handshakeLine is go-plugin's handshake on a provider's standard output:
// CORE|APP|NETWORK|ADDRESS|PROTOCOL[|CERT[|MULTIPLEX]]. Every other line the provider prints is logged,
// never read as the handshake, so a print before it cannot break the start.
var handshakeLine = regexp.MustCompile(`^\d+\|\d+\|(unix|tcp)\|[^|]+\|grpc(\|[^|]*)*$`)

// procRunner runs a provider as a child process the way capgate wants it run: standard input
// /dev/null, standard output filtered to the handshake line (the rest logged), standard
// error logged, its own process group, killed with capgate (the parent-death signal) and
// killed as a group.
type procRunner struct {
	cmd     *exec.Cmd
	log     *slog.Logger
	stdout  io.ReadCloser // the handshake lines alone
	stderr  io.ReadCloser
	raw     io.ReadCloser
	pid     int
	program *os.File // the sealed copy it runs, closed once it has started
	// closeBinds closes the folders its sandbox binds, once it has started.
	closeBinds func()
}

var _ runner.Runner = (*procRunner)(nil)

// runnerFunc is the go-plugin RunnerFunc that runs cfg's program in cfg's sandbox: go-plugin's
// spec holds only the protocol's own variables (SkipHostEnv), and cfg.Env is added to them,
// nothing else of capgate's environment. The sandbox sees the system's libraries, cfg.Dir
// read-only (the provider's package, its working folder) and the folder go-plugin made for
// the provider's socket, which it must write; nothing else of the host.
//
// With cfg.Digest set, the program run is a sealed copy of cfg.Command whose digest was
// checked (sealedProgram), run through the child's own descriptor of it: the file checked is
// the file executed.
func runnerFunc(log *slog.Logger, cfg Config, egressSocket string, made func(*procRunner)) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, plug *exec.Cmd, socketDir string) (runner.Runner, error) {
		box := cfg.Sandbox
		if box == nil {
			box = unconfined
		}
		spec := sandbox.Spec{
			Program: cfg.Command,
			Args:    append([]string{cfg.Command}, cfg.Args...),
			Dir:     "/",
			Env:     append(append([]string(nil), cfg.Env...), plug.Env...),
		}
		if socketDir != "" {
			spec.Writable = []string{socketDir}
		}
		if cfg.Dir != "" {
			spec.Dir = cfg.Dir
			spec.ReadOnly = []string{cfg.Dir}
		}
		// The egress proxy's socket: the sandbox's 127.0.0.1:sandbox.ProxyPort reaches it.
		spec.ProxySocket = egressSocket
		spec.Limits = cfg.Limits
		closeBinds := func() {}
		if len(cfg.Intents) > 0 {
			binds, closeAll, err := sandbox.IntentBinds(cfg.SandboxRoot, cfg.AppFolder, cfg.Intents)
			if err != nil {
				return nil, fmt.Errorf("providers: %w", err)
			}
			spec.Binds, closeBinds = binds, closeAll
		}
		var program *os.File
		if cfg.Digest != "" {
			var err error
			if program, err = sealedProgram(cfg.Command, cfg.Digest); err != nil {
				return nil, err
			}
			spec.ProgramFD, spec.RunFD = program, true
		} else if !box.Sees(cfg.Command, spec.ReadOnly) {
			return nil, fmt.Errorf("providers: program %s: not visible in the sandbox (give its digest, or place it in its folder)", cfg.Command)
		}
		cmd, err := box.Command(spec)
		if err != nil {
			if program != nil {
				program.Close()
			}
			return nil, fmt.Errorf("providers: %w", err)
		}
		cmd.Stdin = nil // /dev/null: go-plugin would hand the child capgate's own
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		raw, err := cmd.StdoutPipe()
		if err == nil {
			var stderr io.ReadCloser
			if stderr, err = cmd.StderrPipe(); err == nil {
				r := &procRunner{cmd: cmd, log: log, raw: raw, stderr: stderr, program: program, closeBinds: closeBinds}
				made(r)
				return r, nil
			}
		}
		if program != nil {
			program.Close()
		}
		return nil, err
	}
}

// unconfined runs a provider with capgate's own rights, for a Config without a sandbox.
var unconfined = func() *sandbox.Sandbox {
	s, err := sandbox.Open(context.Background(), sandbox.ModeOffUnsafe)
	if err != nil {
		panic(err)
	}
	return s
}()

func (r *procRunner) Start(context.Context) error {
	err := r.cmd.Start()
	if r.program != nil {
		r.program.Close() // the child holds its own descriptor of it
	}
	if r.closeBinds != nil {
		r.closeBinds()
	}
	if err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	pr, pw := io.Pipe()
	r.stdout = pr
	go func() {
		sc := bufio.NewScanner(r.raw)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			line := sc.Text()
			if handshakeLine.MatchString(line) {
				if _, err := pw.Write([]byte(line + "\n")); err != nil {
					break
				}
				continue
			}
			r.log.Info("provider output", "stream", "stdout", "line", line)
		}
		pw.Close()
	}()
	return nil
}

func (r *procRunner) Wait(context.Context) error { return r.cmd.Wait() }

// Kill kills the provider's whole process group: a child it started dies with it.
func (r *procRunner) Kill(context.Context) error {
	if r.pid == 0 {
		return nil
	}
	err := syscall.Kill(-r.pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		if perr := r.cmd.Process.Kill(); perr != nil && !errors.Is(perr, os.ErrProcessDone) {
			return perr
		}
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }
func (r *procRunner) ID() string            { return strconv.Itoa(r.pid) }
func (r *procRunner) Diagnose(context.Context) string {
	return "the provider did not complete capgate's handshake: is it a program built with capgate's sdk/provider?"
}

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }
