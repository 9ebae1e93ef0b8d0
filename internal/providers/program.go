package providers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrDigest is a provider program whose content is not the digest it was installed with.
var ErrDigest = errors.New("the provider program is not the one installed: its digest differs")

// MaxProgramBytes bounds a provider program capgate copies to run.
const MaxProgramBytes = 512 << 20

// sealedProgram copies the program at path into a sealed memory file while hashing it, and
// returns that file once its digest is want ("sha256:" and 64 hex digits). The child runs the
// sealed copy (through /proc/self/fd), so what runs is exactly what was checked: a program
// swapped, rewritten or deleted after the check runs as it was checked, or not at all.
func sealedProgram(path, want string) (*os.File, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("providers: program: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("providers: program: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("providers: program %s: not a regular file", path)
	}
	fd, err := unix.MemfdCreate("capgate-provider", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("providers: program: memfd: %w", err)
	}
	mem := os.NewFile(uintptr(fd), "capgate-provider")
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(mem, h), io.LimitReader(src, MaxProgramBytes+1))
	if err == nil && n > MaxProgramBytes {
		err = fmt.Errorf("larger than %d bytes", MaxProgramBytes)
	}
	if err != nil {
		mem.Close()
		return nil, fmt.Errorf("providers: program %s: %w", path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		mem.Close()
		return nil, ErrDigest
	}
	if _, err := unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		mem.Close()
		return nil, fmt.Errorf("providers: program: seal: %w", err)
	}
	if err := mem.Chmod(0o500); err != nil {
		mem.Close()
		return nil, fmt.Errorf("providers: program: %w", err)
	}
	return mem, nil
}

// ProgramDigest is the digest of the program at path as Config.Digest takes it.
func ProgramDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, MaxProgramBytes+1)); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
