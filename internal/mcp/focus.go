package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgate/capgate/internal/broker"
	"github.com/capgate/capgate/internal/plan"
)

// A tools/list can be focused on a task: with the task in its _meta (TaskMeta, and at most
// LimitMeta candidates), the answer holds only the capability tools planning offers for it
// (the candidates of capgate__find_capabilities, default plan.DefaultCandidates) and capgate's
// own tools, so that a client of hundreds of tools reads a handful. The candidates are found
// among what the client may use and the person has not kept to themselves
// (broker.Plannable), exactly as find_capabilities finds them; the tools kept are the
// session's own, so a focused list never holds a tool an unfocused one would not.
const (
	// TaskMeta is the _meta key of a tools/list request that focuses the answer on a task.
	TaskMeta = "capgate/task"
	// LimitMeta is the _meta key of the most candidates a focused tools/list holds.
	LimitMeta = "capgate/limit"
)

// focusOf reads the focus of a tools/list request: its task and limit, whether it asks for
// one, and what is wrong with it when it is not one (a task that is not text, a limit that is
// not a whole number from 1 to plan.MaxCandidates).
func focusOf(req mcpsdk.Request) (task string, limit int, focused bool, err error) {
	p, ok := req.GetParams().(*mcpsdk.ListToolsParams)
	if !ok || p == nil || p.Meta == nil {
		return "", 0, false, nil
	}
	rawTask, hasTask := p.Meta[TaskMeta]
	rawLimit, hasLimit := p.Meta[LimitMeta]
	if !hasTask {
		if hasLimit {
			return "", 0, false, fmt.Errorf("_meta.%s: given without _meta.%s", LimitMeta, TaskMeta)
		}
		return "", 0, false, nil
	}
	if task, ok = rawTask.(string); !ok {
		return "", 0, false, fmt.Errorf("_meta.%s: must be a string", TaskMeta)
	}
	if hasLimit {
		f, ok := rawLimit.(float64)
		if !ok || f != float64(int(f)) || f < 1 || f > plan.MaxCandidates {
			return "", 0, false, fmt.Errorf("_meta.%s: must be a whole number from 1 to %d", LimitMeta, plan.MaxCandidates)
		}
		limit = int(f)
	}
	return task, limit, true, nil
}

// invalidParams is the JSON-RPC error of a request whose params break a rule.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// focus keeps, of the tools/list answer res, capgate's own tools and the tools of the
// candidates for task.
func (s *session) focus(ctx context.Context, caller broker.Caller, task string, limit int, res mcpsdk.Result) (mcpsdk.Result, error) {
	list, ok := res.(*mcpsdk.ListToolsResult)
	if !ok {
		return res, nil
	}
	if s.h.o.Planner == nil {
		return nil, invalidParams("planning is not served here: a tools/list cannot be focused on a task")
	}
	plannable, err := s.h.o.Broker.Plannable(ctx, caller)
	if err != nil {
		return nil, errors.New("planning failed: the person's mandates could not be read")
	}
	cands, err := s.h.o.Planner.Candidates(task, plannable, limit)
	if errors.Is(err, plan.ErrTask) {
		return nil, invalidParams(fmt.Sprintf("_meta.%s: must be 1 to 4096 bytes of text", TaskMeta))
	}
	if err != nil {
		return nil, errors.New("planning failed")
	}
	keep := map[string]bool{}
	for _, c := range cands {
		keep[ToolName(c.App.Alias, c.Method, c.ID.String())] = true
	}
	out := *list
	out.Tools = make([]*mcpsdk.Tool, 0, len(keep)+5)
	for _, t := range list.Tools {
		if reserved(t.Name) || keep[t.Name] {
			out.Tools = append(out.Tools, t)
		}
	}
	return &out, nil
}
