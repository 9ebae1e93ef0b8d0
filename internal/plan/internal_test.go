package plan

import "testing"

// TestScoredWithBM25 builds the same index under BM25 and under bleve's default TF-IDF and
// checks that the scores differ: the model the mapping names is the one that scores.
func TestScoredWithBM25(t *testing.T) {
	docs := []Doc{
		{ID: "a", English: []string{"set the alarm clock", "wake me up at seven"}},
		{ID: "b", English: []string{"alarm alarm alarm, a very long description of an alarm system with many other words in it"}},
		{ID: "c", English: []string{"send an email"}},
	}
	score := func() map[string]float64 {
		x, err := Build(docs)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		hits, err := x.Search("alarm", []string{"a", "b", "c"}, 5)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range hits {
			out[h.ID] = h.Score
		}
		return out
	}
	bm25 := score()
	defer func(m string) { scoringModel = m }(scoringModel)
	scoringModel = "tf-idf"
	tfidf := score()
	if len(bm25) != 2 || bm25["a"] == tfidf["a"] || bm25["b"] == tfidf["b"] {
		t.Fatalf("BM25 %v, TF-IDF %v: the scoring model is not honoured", bm25, tfidf)
	}
}
