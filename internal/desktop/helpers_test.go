package desktop_test

// The tests run a real desktop: Xvfb, a D-Bus session bus (whose accessibility bus AT-SPI2's
// launcher starts on demand) and the GTK 3 app testdata/desktop/counter.py, from Debian's
// xvfb, dbus, at-spi2-core, python3-gi and gir1.2-gtk-3.0, which .ci/run installs. Off Linux
// they skip; on Linux without those programs they skip, except under CI=true, where they
// fail.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/desktop"
)

// need skips the test, or fails it under CI, when prog is missing.
func need(t *testing.T, progs ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("AT-SPI2 over D-Bus is tested on Linux only")
	}
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing: .ci/run installs it", p)
			}
			t.Skipf("%s is missing (Debian: xvfb, dbus, at-spi2-core, python3-gi, gir1.2-gtk-3.0)", p)
		}
	}
}

// session is a desktop of the test's own: Xvfb on a free display, a session bus, and the
// counter app, all stopped at the test's end.
type session struct {
	t   *testing.T
	ctx context.Context
	bus *desktop.Bus
	app desktop.App
}

func startSession(t *testing.T) *session {
	t.Helper()
	need(t, "Xvfb", "dbus-daemon", "/usr/bin/python3", "/usr/libexec/at-spi-bus-launcher")
	s := &session{t: t, ctx: context.Background()}
	display := ""
	for n := 90 + os.Getpid()%50; n < 400; n++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n)); os.IsNotExist(err) {
			if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); os.IsNotExist(err) {
				display = fmt.Sprintf(":%d", n)
				break
			}
		}
	}
	x := exec.Command("Xvfb", display, "-screen", "0", "800x600x24", "-nolisten", "tcp")
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Process.Kill(); x.Wait() })
	dbusCmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := dbusCmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dbusCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbusCmd.Process.Kill(); dbusCmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the session bus gave no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	t.Setenv("DISPLAY", display)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%s", display[1:])); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Xvfb did not start")
		}
	}
	app := exec.Command("/usr/bin/python3", filepath.Join("..", "..", "testdata", "desktop", "counter.py"))
	app.Env = append(os.Environ(), "GTK_MODULES=gail:atk-bridge", "NO_AT_BRIDGE=0")
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Process.Kill(); app.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if s.bus == nil {
			if b, err := desktop.Connect(s.ctx); err == nil {
				s.bus = b
				t.Cleanup(func() { b.Close() })
			}
		}
		if s.bus != nil {
			if apps, err := s.bus.Apps(s.ctx); err == nil {
				for _, a := range apps {
					if a.Name == "org.example.Counter" {
						s.app = a
						return s
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the counter app never registered with the accessibility bus")
		}
	}
}
