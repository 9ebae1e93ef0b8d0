package consent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capgate/capgate/internal/consent"
	"github.com/capgate/capgate/internal/store/sqlite"
)

// The broker asks, the person approves on the approval surface (here the same process),
// and the broker's Wait sees the answer.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "consent-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "capgate.db"))
	if err != nil {
		panic(err)
	}
	defer st.Close()

	svc := consent.New(st, &consent.Options{Surface: true})
	c, err := svc.Ask(ctx, consent.Request{
		ClientID:      "cl_agent",
		Kind:          consent.KindCall,
		Permission:    "fs.delete",
		Summary:       "Delete a file",
		Params:        []byte(`{"path":"/home/ada/draft.txt"}`),
		Risk:          "high",
		SideEffects:   "destructive",
		Reversibility: consent.Reversible,
		UndoWindowMS:  30 * 60 * 1000,
		Reason:        "the draft is obsolete",
	})
	if err != nil {
		panic(err)
	}
	_, r, _ := svc.Get(ctx, c.ID)
	fmt.Println(r.Summary, "-", consent.Describe(r).Undo)

	if err := svc.Approve(ctx, c.ID, "ada", false); err != nil {
		panic(err)
	}
	answered, err := svc.Wait(ctx, c.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(answered.State, "by", answered.AnsweredBy)
	// Output:
	// Delete a file - can be undone within 30 min after it runs
	// approved by ada
}
