package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgate/capgate/client"
)

// Example calls a real gateway: exampleGateway starts one in this process, as capgate serve
// would, and adds a client, as capgate client add would, whose key it returns. An agent is
// given the gateway's URL and its key, and does the rest.
func Example() {
	url, key, stop := exampleGateway()
	defer stop()
	ctx := context.Background()

	c, err := client.New(&client.Options{Server: url, Key: key, Timeout: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A low-risk read needs no token (and is recorded all the same).
	theme := map[string]string{"category": "appearance", "key": "theme"}
	res, err := c.Query(ctx, client.Call{App: "settings", Method: "get_setting", Params: theme})
	if err != nil {
		fmt.Println(err)
		return
	}
	var setting struct{ Value string }
	if err := res.Decode(&setting); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the theme is", setting.Value)

	// A read-only token is issued at once, with no one asked.
	tok, err := c.RequestCapability(ctx, client.TokenRequest{
		Capabilities: []string{"system.settings.read"}, Duration: 10 * time.Minute, MaxUses: 5, Reason: "check the theme",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("issued with no one asked:", tok.ConsentID == "")

	// It does not cover a write: the refusal is an *client.Error to test.
	light := map[string]string{"category": "appearance", "key": "theme", "value": "light"}
	_, err = c.Call(ctx, client.Call{App: "settings", Method: "set_setting", Params: light, Token: tok.Wire})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println("refused:", errors.Is(err, client.ErrCapabilityDenied), e.Code, e.Decision)
	}

	// Explain says why, and changes nothing.
	why, err := c.Explain(ctx, client.Call{App: "settings", Method: "set_setting", Params: light, Token: tok.Wire})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("explained:", why.Outcome, why.Code, "at step", why.Step)

	// Output:
	// the theme is dark
	// issued with no one asked: true
	// refused: true CAPABILITY_DENIED deny
	// explained: deny CAPABILITY_DENIED at step 5
}

// exampleGateway serves a gateway and adds a client to it; stop ends both.
func exampleGateway() (url, key string, stop func()) {
	s, err := serve(serveOptions{})
	if err != nil {
		panic(err)
	}
	if key, _, err = s.addClient(clientSpec{name: "example-agent"}); err != nil {
		panic(err)
	}
	return s.url, key, func() {
		if err := s.stop(); err != nil {
			panic(err)
		}
	}
}
