package ipc

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/policy"
)

// writeSuccess writes, byte for byte, what writeJSON writes for the same success, or nothing
// at all.
func FuzzWriteSuccess(f *testing.F) {
	f.Add("req-1", `{"category":"display","key":"brightness","type":"int","value":50}`, "", "", int64(0))
	f.Add("r", ` { "a" : [1, 2.50, "x\u00e9"] } `, "undo_abc.1", "app.com.example.x.undo", int64(1706620800123))
	f.Add("r\"q", `null`, "", "", int64(-5))
	f.Add("r", `{"a":"<b>&</b>"}`, "t\u2028", "", int64(1))
	f.Add("r", `{"a":`, "", "", int64(0))
	f.Add("", ``, "", "é", int64(0))
	f.Fuzz(func(t *testing.T, requestID, result, undo, comp string, until int64) {
		now := time.Unix(1706620800, 0)
		res := broker.Result{Decision: policy.Decision{Outcome: policy.Allow}, Data: json.RawMessage(result), UndoToken: undo, Compensation: comp}
		if until != 0 {
			res.UndoUntil = time.UnixMilli(until)
		}
		fast := httptest.NewRecorder()
		if !writeSuccess(fast, requestID, now, res) {
			if fast.Body.Len() != 0 || len(fast.Header()) != 0 {
				t.Fatal("wrote part of an answer it declined")
			}
			return
		}
		resp := Success(requestID, now, res.Data)
		resp.Body.UndoToken, resp.Body.Compensation = res.UndoToken, res.Compensation
		if !res.UndoUntil.IsZero() {
			resp.Body.UndoUntil = res.UndoUntil.UnixMilli()
		}
		slow := httptest.NewRecorder()
		writeJSON(slow, 200, resp)
		if !bytes.Equal(fast.Body.Bytes(), slow.Body.Bytes()) {
			t.Fatalf("fast %q\nslow %q", fast.Body.Bytes(), slow.Body.Bytes())
		}
		if fast.Code != slow.Code || fast.Header().Get("Content-Type") != slow.Header().Get("Content-Type") {
			t.Fatalf("status %d %q, want %d %q", fast.Code, fast.Header().Get("Content-Type"), slow.Code, slow.Header().Get("Content-Type"))
		}
	})
}
