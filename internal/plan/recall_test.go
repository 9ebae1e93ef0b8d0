package plan_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/capgate/capgate/internal/plan"
)

// labelled is the set the retrieval is measured on (testdata/labelled.json): 150 capabilities
// of 15 kinds of object and 10 actions, each described and exemplified in English and
// Turkish, and 300 tasks, one in each language per capability, worded unlike its examples
// (other verbs, Turkish case endings), each labelled with the one capability it wants.
type labelled struct {
	Capabilities []struct {
		ID string
		En []string
		Tr []string
	}
	Tasks []struct {
		Task, Lang, Want string
	}
}

func loadLabelled(t testing.TB) (labelled, *plan.Index, []string) {
	t.Helper()
	data, err := os.ReadFile("testdata/labelled.json")
	if err != nil {
		t.Fatal(err)
	}
	var l labelled
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	docs := make([]plan.Doc, len(l.Capabilities))
	ids := make([]string, len(l.Capabilities))
	for i, c := range l.Capabilities {
		docs[i], ids[i] = plan.Doc{ID: c.ID, Names: c.En[:1], English: c.En[1:], Turkish: c.Tr}, c.ID
	}
	x, err := plan.Build(docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return l, x, ids
}

// Recall is recall@5 and the mean reciprocal rank of a labelled set, by language.
type Recall struct {
	Tasks    int
	RecallAt float64 // the share of tasks whose capability is among the first 5
	MRR      float64
}

func measure(t testing.TB, l labelled, x *plan.Index, ids []string) map[string]Recall {
	out := map[string]Recall{}
	for _, task := range l.Tasks {
		hits, err := x.Search(task.Task, ids, plan.DefaultCandidates)
		if err != nil {
			t.Fatal(err)
		}
		for _, lang := range []string{task.Lang, "all"} {
			r := out[lang]
			r.Tasks++
			for i, h := range hits {
				if h.ID == task.Want {
					r.RecallAt++
					r.MRR += 1 / float64(i+1)
					break
				}
			}
			out[lang] = r
		}
	}
	for k, r := range out {
		r.RecallAt /= float64(r.Tasks)
		r.MRR /= float64(r.Tasks)
		out[k] = r
	}
	return out
}

// TestRecallOnLabelledTasks measures recall@5 and MRR over the labelled set and holds them
// above a floor well under what they are (docs/planning.md has the figures), so that a change
// that breaks retrieval in either language fails here.
func TestRecallOnLabelledTasks(t *testing.T) {
	l, x, ids := loadLabelled(t)
	if len(l.Capabilities) < 150 || len(l.Tasks) < 200 {
		t.Fatalf("the labelled set has %d capabilities and %d tasks; the issue asks for 150 and 200", len(l.Capabilities), len(l.Tasks))
	}
	for lang, r := range measure(t, l, x, ids) {
		t.Logf("%s: %d tasks, recall@5 %.3f, MRR %.3f", lang, r.Tasks, r.RecallAt, r.MRR)
		if r.RecallAt < 0.7 || r.MRR < 0.5 {
			t.Errorf("%s: recall@5 %.3f, MRR %.3f, under the floor (0.7, 0.5)", lang, r.RecallAt, r.MRR)
		}
	}
}

// TestSearchOnlyAmongAllowed checks that the filter comes before the top is taken: with the
// best match left out of the allowed set, it never appears, and the places are filled from
// what is allowed.
func TestSearchOnlyAmongAllowed(t *testing.T) {
	_, x, ids := loadLabelled(t)
	const task = "Please add an alarm for me"
	all, err := x.Search(task, ids, 5)
	if err != nil || len(all) != 5 {
		t.Fatalf("%v %v", all, err)
	}
	var allowed []string
	for _, id := range ids {
		if id != all[0].ID {
			allowed = append(allowed, id)
		}
	}
	some, err := x.Search(task, allowed, 5)
	if err != nil || len(some) != 5 {
		t.Fatalf("%v %v", some, err)
	}
	for _, h := range some {
		if h.ID == all[0].ID {
			t.Fatal("a capability outside the allowed set was returned")
		}
	}
	if none, _ := x.Search(task, nil, 5); len(none) != 0 {
		t.Errorf("nothing allowed: %v", none)
	}
	for _, bad := range []string{"", "   ", string(make([]byte, plan.MaxTaskBytes+1))} {
		if _, err := x.Search(bad, ids, 5); err == nil {
			t.Errorf("a task of %d bytes was searched", len(bad))
		}
	}
	if hits, _ := x.Search(task, ids, 1000); len(hits) > plan.MaxCandidates {
		t.Errorf("%d candidates", len(hits))
	}
}

// BenchmarkSearch measures one task's search over the labelled set's 150 capabilities, all
// allowed.
func BenchmarkSearch(b *testing.B) {
	_, x, ids := loadLabelled(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.Search("Remove this invoice for good", ids, 5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures building the index of the labelled set's 150 capabilities, as a
// registry change does.
func BenchmarkBuild(b *testing.B) {
	l, _, _ := loadLabelled(b)
	docs := make([]plan.Doc, len(l.Capabilities))
	for i, c := range l.Capabilities {
		docs[i] = plan.Doc{ID: c.ID, Names: c.En[:1], English: c.En[1:], Turkish: c.Tr}
	}
	for b.Loop() {
		x, err := plan.Build(docs)
		if err != nil {
			b.Fatal(err)
		}
		x.Close()
	}
}
