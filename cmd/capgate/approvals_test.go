package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// approvals list and show point to the request's own page on the approval page when the
// gateway's address is known (--server, else $CAPGATE_SERVER), and to none when it is not.
func TestApprovalsPrintThePage(t *testing.T) {
	data := t.TempDir()
	mustCode(t, capgate(t, "", nil, "client", "add", "alice", "--data", data), 0) // creates the store
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(data, gateway.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := consent.New(st, &consent.Options{Surface: true}).Ask(ctx, consent.Request{ClientID: "cl_alice", ClientName: "alice",
		Kind: consent.KindCall, Permission: "app.notes.write", Summary: "Write a note"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := "http://127.0.0.1:7766/ui/requests/" + c.ID

	r := capgate(t, "", nil, "approvals", "list", "--data", data)
	mustCode(t, r, 0)
	if !strings.Contains(r.stdout, c.ID) || strings.Contains(r.stdout, "/ui/requests/") {
		t.Errorf("list with no gateway address:\n%s", r.stdout)
	}
	for _, how := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--server", "http://127.0.0.1:7766/"}},
		{[]string{"CAPGATE_SERVER=http://127.0.0.1:7766"}, nil},
	} {
		r := capgate(t, "", how.env, append([]string{"approvals", "list", "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		if !strings.Contains(r.stdout, "answer at "+page+"\n") {
			t.Errorf("list %v %v does not print the page:\n%s", how.env, how.args, r.stdout)
		}
		r = capgate(t, "", how.env, append([]string{"approvals", "list", "--json", "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		var list []struct{ ID, URL string }
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].URL != page {
			t.Errorf("list --json: %s (%v)", r.stdout, err)
		}
		r = capgate(t, "", how.env, append([]string{"approvals", "show", c.ID, "--data", data}, how.args...)...)
		mustCode(t, r, 0)
		var one struct{ URL string }
		if err := json.Unmarshal([]byte(r.stdout), &one); err != nil || one.URL != page {
			t.Errorf("show: %s (%v)", r.stdout, err)
		}
	}
	r = capgate(t, "", nil, "approvals", "show", c.ID, "--data", data)
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, "/ui/requests/") {
		t.Errorf("show with no gateway address names a page:\n%s", r.stdout)
	}
	for _, bad := range []string{"127.0.0.1:7766", "ftp://127.0.0.1", "http://"} {
		mustCode(t, capgate(t, "", nil, "approvals", "list", "--data", data, "--server", bad), 2)
	}
}
