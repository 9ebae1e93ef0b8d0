// Package desktoptest runs a real desktop for the tests of capgate's accessibility parts:
// Xvfb on a free display, a D-Bus session bus of its own (whose accessibility bus AT-SPI2's
// launcher starts on demand) and the GTK 3 app testdata/desktop/counter.py, from Debian's
// xvfb, dbus, at-spi2-core, python3-gi and gir1.2-gtk-3.0, which .ci/run installs. Off Linux
// a test skips; on Linux without those programs it skips, except under CI=true, where it
// fails.
package desktoptest

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

// CounterName is the counter app's desktop id: its accessible name.
const CounterName = "org.example.Counter"

// Session is a desktop of the test's own, stopped at the test's end.
type Session struct {
	Bus     *desktop.Bus
	App     desktop.App // the counter app
	Env     []string    // DISPLAY and DBUS_SESSION_BUS_ADDRESS, for a child that joins the session
	Display string
}

// need skips the test, or fails it under CI, when a program is missing.
func need(t testing.TB, progs ...string) {
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

// Start starts Xvfb, a session bus and the counter app, sets DISPLAY and
// DBUS_SESSION_BUS_ADDRESS for the test (t.Setenv), and waits until the app is registered
// with the accessibility bus. root is the repository's root, relative to the test.
func Start(t *testing.T, root string) *Session {
	t.Helper()
	need(t, "Xvfb", "dbus-daemon", "/usr/bin/python3", "/usr/libexec/at-spi-bus-launcher")
	ctx := context.Background()
	s := &Session{}
	for n := 90 + os.Getpid()%200; n < 600; n++ {
		_, e1 := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		_, e2 := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		if os.IsNotExist(e1) && os.IsNotExist(e2) {
			s.Display = fmt.Sprintf(":%d", n)
			break
		}
	}
	x := exec.Command("Xvfb", s.Display, "-screen", "0", "800x600x24", "-nolisten", "tcp")
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Process.Kill(); x.Wait() })
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Process.Kill(); bus.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the session bus gave no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	t.Setenv("DISPLAY", s.Display)
	s.Env = []string{"DBUS_SESSION_BUS_ADDRESS=" + addr, "DISPLAY=" + s.Display}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat("/tmp/.X11-unix/X" + s.Display[1:]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Xvfb did not start")
		}
	}
	app := exec.Command("/usr/bin/python3", filepath.Join(root, "testdata", "desktop", "counter.py"))
	app.Env = append(os.Environ(), "GTK_MODULES=gail:atk-bridge", "NO_AT_BRIDGE=0")
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Process.Kill(); app.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if s.Bus == nil {
			if b, err := desktop.Connect(ctx); err == nil {
				s.Bus = b
				t.Cleanup(func() { b.Close() })
			}
		}
		if s.Bus != nil {
			if apps, err := s.Bus.Apps(ctx); err == nil {
				for _, a := range apps {
					if a.Name == CounterName {
						s.App = a
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
