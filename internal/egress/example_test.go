package egress_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/egress"
)

// A proxy served on a unix socket (capgate makes one per sandbox), a call opened with its
// declared destinations, and a client inside the sandbox asking for a host its capability
// does not declare: refused before anything is resolved, with the rule named.
func Example() {
	dir, _ := os.MkdirTemp("", "egress")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "egress.sock")

	p, err := egress.New(&egress.Options{
		OnRefusal: func(c egress.Call, dest, rule string) {
			fmt.Printf("audit: %s refused %s\n", c.CallID, dest)
		},
	})
	if err != nil {
		panic(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		panic(err)
	}
	go p.Serve(l)
	defer p.Close()

	cred, done, err := p.Open(egress.Call{
		AppID: "com.example.weather", CapabilityID: "net.com.example.weather.forecast", CallID: "call-1",
		Destinations: []egress.HostPort{egress.MustParseHostPort("api.weather.example.com:443")},
	})
	if err != nil {
		panic(err)
	}
	defer done()

	// What a program in the sandbox does with HTTP_PROXY=http://capgate:CRED@127.0.0.1:3128
	// (the shim in the sandbox carries the port to the unix socket).
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(egress.ProxyUser, cred), Host: "127.0.0.1:3128"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := client.Get("http://tracker.example.net/collect")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body))
	// Output:
	// audit: call-1 refused tracker.example.net:80
	// 403
	// capgate egress proxy: refused the connection to tracker.example.net:80: the destination (host and port) must be one of the calling capability's network_intents
}
