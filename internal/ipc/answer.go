package ipc

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/capgate/capgate/internal/broker"
)

// jsonContentType is the Content-Type of every envelope answer, one slice for them all: net/http
// reads it and never changes it.
var jsonContentType = []string{"application/json"}

// answerBuffers hold the success answers writeSuccess builds.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledAnswer bounds the buffers kept for the next answer.
const maxPooledAnswer = 64 << 10

// writeSuccess writes the success envelope of res for requestID, byte for byte as writeJSON
// writes Success's Response (encoding/json, HTML not escaped, the result compacted, a newline
// after), without building the Response or reflecting over it: the answer of nearly every
// call. It reports false, having written nothing, when a string would need an escape or the
// result is not valid JSON; writeJSON then answers.
func writeSuccess(w http.ResponseWriter, requestID string, now time.Time, res broker.Result) bool {
	if !plainJSONText(requestID) || !plainJSONText(res.UndoToken) || !plainJSONText(res.Compensation) {
		return false
	}
	b := answerBuffers.Get().(*bytes.Buffer)
	defer func() {
		if b.Cap() <= maxPooledAnswer {
			answerBuffers.Put(b)
		}
	}()
	b.Reset()
	b.WriteString(`{"header":{"msg_type":"llm_response","version":"1.0","request_id":"`)
	b.WriteString(requestID)
	b.WriteString(`","timestamp":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), now.Unix(), 10))
	b.WriteString(`},"body":{"status":"success"`)
	if len(res.Data) > 0 {
		b.WriteString(`,"result":`)
		if json.Compact(b, res.Data) != nil {
			return false
		}
	}
	if res.UndoToken != "" {
		b.WriteString(`,"undo_token":"`)
		b.WriteString(res.UndoToken)
		b.WriteByte('"')
	}
	if !res.UndoUntil.IsZero() {
		if ms := res.UndoUntil.UnixMilli(); ms != 0 {
			b.WriteString(`,"undo_until":`)
			b.Write(strconv.AppendInt(b.AvailableBuffer(), ms, 10))
		}
	}
	if res.Compensation != "" {
		b.WriteString(`,"compensation":"`)
		b.WriteString(res.Compensation)
		b.WriteByte('"')
	}
	b.WriteString("}}\n")
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
	return true
}

// plainJSONText reports whether s is written in JSON as it is: printable ASCII without a
// quote or a backslash, which encoding/json escapes in no way.
func plainJSONText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
