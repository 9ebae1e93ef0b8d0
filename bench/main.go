// Command bench builds and runs capgate's race, bench/race: capgate's hot paths side by side
// with what people would pick instead (cedar-go, OPA, macaroons), in one process and one run.
// From the repository's root:
//
//	go run ./bench            # the table, and the chart written to docs/race.png
//	go run ./bench --json     # the same as JSON
//
// The race is a module of its own (bench/race/go.mod), so that its contenders and the
// plotting library never enter capgate's go.mod, and `go test ./...` at the root never
// compiles them. This launcher, in capgate's module and of the standard library only, is
// what lets the one command be `go run ./bench`: it builds the race with the same go
// command (`go build` in bench/race) and runs it here, with the arguments it was given.
// `go run -C bench/race .` runs the race without it (the chart then goes to
// bench/race/docs/ if that folder exists: pass --chart).
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	// The race's folder: bench/race beside this launcher in capgate's module, found from the
	// module the working folder is in.
	out, err := exec.Command(goCmd, "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "bench", "race")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return fmt.Errorf("the race's module is not here (run from within capgate's repository): %w", err)
	}
	tmp, err := os.MkdirTemp("", "capgate-race-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, "race")
	build := exec.Command(goCmd, "build", "-o", exe, ".")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the race: %w", err)
	}
	// An interrupt from the terminal reaches the race too (the same process group); the
	// launcher waits for it to end rather than leave it behind.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	race := exec.Command(exe, os.Args[1:]...)
	race.Stdin, race.Stdout, race.Stderr = os.Stdin, os.Stdout, os.Stderr
	return race.Run()
}
