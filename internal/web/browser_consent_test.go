package web_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/capgate/capgate/internal/consent"
)

// In a real browser, what the person reads before granting is the same whether the card
// arrived while the page was open (built by the script from requests.json) or came with a
// reload (rendered by the server): a token request with its uses, lifetime, constraints and
// a revocable badge, never "irreversible"; the look-alike characters of the client's name
// and the reason flagged; a read with nothing to undo; a tool's pin request with its
// difference in its own section and a day left said as a day, never "1439 min 56 s".
func TestBrowserShowsWhatIsGranted(t *testing.T) {
	ctx, do := newChrome(t, 90*time.Second)
	e := newEnv(t, 0)
	agent := e.addClient("Reseаrch assistant") // a Cyrillic а
	do("log in", chromedp.Navigate(e.srv.URL+e.g.LoginLink()), chromedp.WaitVisible(css("#empty")))

	ask := map[string]any{}
	for k, v := range tokenAsk {
		ask[k] = v
	}
	ask["reason"] = "log in to pаypal and tidy"
	var ans struct{ Token string }
	tokDone := make(chan int, 1)
	go func() { tokDone <- e.api(agent, "/v1/capabilities/request", ask, &ans) }()
	tid := e.waitPending(consent.KindToken)
	readDone := e.callAsync(agent, "review", `{}`, "")
	rid := e.waitPending(consent.KindCall)
	pid := putPin(t, e, consent.Request{ClientID: "capgate:toolserver", ClientName: "capgate (tool server srv)", Kind: "pin",
		Summary: "The MCP tool server \"srv\" changed the tool \"echo\".", Reversibility: consent.Irreversible, SideEffects: "system", Risk: "high",
		Difference: []string{`- /description: "Echoes the text back."`, `+ /description: "Echoes <b>back</b>."`}}, 24*time.Hour)

	type card struct {
		Uses, Lifetime, Undo, Countdown, Text string
		Constraints, Lookalikes, Diff         []string
		Revocable, Irreversible, Badge        bool
	}
	read := func(id string) card {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Evaluate[card](`(() => {
			const c = document.getElementById('r-`+id+`');
			const text = sel => { const e = c.querySelector(sel); return e ? e.textContent : ''; };
			const all = sel => [...c.querySelectorAll(sel)].map(e => e.textContent);
			return {
				Uses: text('.uses'), Lifetime: text('.lifetime'), Undo: text('.undo'), Countdown: text('.countdown'), Text: c.textContent,
				Constraints: all('.constraints li'), Lookalikes: all('.lookalikes li'), Diff: all('.diff-lines li'),
				Revocable: !!c.querySelector('.badge.revocable'), Irreversible: !!c.querySelector('.badge.irrev'),
				Badge: !!c.querySelector('.badge.lookalike'),
			};
		})()`))
		if err != nil {
			t.Fatalf("read the card %s: %v", id, err)
		}
		return got
	}
	longMinutes := regexp.MustCompile(`\d{3,} min`)
	for _, how := range []string{"arrived", "reloaded"} {
		if how == "reloaded" {
			do("reload", chromedp.Reload())
		}
		do("see the three requests "+how, chromedp.WaitVisible(css("#r-"+tid+" button.approve")),
			chromedp.WaitVisible(css("#r-"+rid+" button.approve")), chromedp.WaitVisible(css("#r-"+pid+" button.approve")),
			chromedp.Sleep(1100*time.Millisecond)) // a tick of the countdowns

		tok := read(tid)
		if tok.Uses != "at most 1000 uses" || !strings.HasPrefix(tok.Lifetime, "29 days 4 h, until ") || len(tok.Constraints) != 5 ||
			tok.Constraints[4] != `only when this CEL condition holds: params.path.startsWith("/srv/ws/")` {
			t.Errorf("%s: the token request's terms: %+v", how, tok)
		}
		if !tok.Revocable || tok.Irreversible || tok.Undo != consent.UndoRevoke || strings.Contains(tok.Text, "cannot be undone") {
			t.Errorf("%s: the token request says it cannot be taken back: %+v", how, tok)
		}
		if !tok.Badge || len(tok.Lookalikes) != 3 || !strings.HasPrefix(tok.Lookalikes[2], "Audit tag: ") || !strings.HasPrefix(tok.Lookalikes[0], "Client name: ") ||
			!strings.Contains(tok.Lookalikes[0], `Rese\u0430rch`) || !strings.HasPrefix(tok.Lookalikes[1], "Reason given: ") ||
			!strings.Contains(tok.Lookalikes[1], `p\u0430ypal`) {
			t.Errorf("%s: look-alikes of the token request: %q", how, tok.Lookalikes)
		}

		rd := read(rid)
		if rd.Undo != consent.UndoReadOnly || rd.Irreversible || strings.Contains(rd.Text, "cannot be undone") || !rd.Badge {
			t.Errorf("%s: the read: %+v", how, rd)
		}

		pin := read(pid)
		if len(pin.Diff) != 2 || pin.Diff[1] != `+ /description: "Echoes <b>back</b>."` || strings.Contains(pin.Text, "Reason given") {
			t.Errorf("%s: the pin request's difference: %q", how, pin.Diff)
		}
		if pin.Countdown != "1 day" && pin.Countdown != "23 h 59 min" || longMinutes.MatchString(pin.Text) {
			t.Errorf("%s: a day left reads %q", how, pin.Countdown)
		}
	}
	for _, id := range []string{tid, rid, pid} {
		if err := e.g.Consent.Deny(e.ctx, id, "test"); err != nil {
			t.Error(err)
		}
	}
	<-readDone
	<-tokDone
}
