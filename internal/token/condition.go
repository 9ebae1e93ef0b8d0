package token

import (
	"errors"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// A condition is a CEL expression that must be true for a call to run. It sees three
// variables: params (a map from string to any JSON value: the call's params), permission (a
// string: the permission the call needs) and now (a timestamp). It may use CEL's standard
// functions and macros and nothing else, must be of type bool, and is stopped at a cost of
// MaxConditionCost. Any evaluation error (a missing key, a wrong type, the cost limit) or a
// result that is not a bool is a refusal.

var (
	errConditionType = errors.New("condition must be of type bool")
	errConditionLong = errors.New("condition longer than MaxConditionBytes")
)

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

// newEnv is a condition's environment with data (a map from string to any JSON value) named
// as given, beside permission and now, and the parser's limits.
func newEnv(data string) (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(data, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("permission", cel.StringType),
		cel.Variable("now", cel.TimestampType),
		cel.ParserExpressionSizeLimit(MaxConditionBytes),
		cel.ParserRecursionLimit(64),
	)
}

func env() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		celEnv, celEnvErr = newEnv("params")
	})
	return celEnv, celEnvErr
}

// CompileCondition reports whether expr is a condition a token may carry: it parses, its
// type is bool, and it uses only the three variables and CEL's standard functions. The error
// is CEL's description of the problem, which quotes the expression (the issuer's own text,
// not a secret).
func CompileCondition(expr string) error {
	_, err := compileCondition(expr)
	return err
}

// programCache caches compiled conditions of one environment by their text. It is cleared
// when full: conditions are few, and clearing keeps the bound without bookkeeping.
type programCache struct {
	env func() (*cel.Env, error)
	mu  sync.Mutex
	m   map[string]cel.Program
}

// programs are token conditions, eventPrograms trigger conditions.
var (
	programs      = &programCache{env: env, m: make(map[string]cel.Program)}
	eventPrograms = &programCache{env: envOfEvents, m: make(map[string]cel.Program)}
)

func compileCondition(expr string) (cel.Program, error) { return programs.compile(expr) }

// compile compiles expr in the cache's environment: bool, within the limits, cached.
func (c *programCache) compile(expr string) (cel.Program, error) {
	if len(expr) > MaxConditionBytes {
		return nil, errConditionLong
	}
	c.mu.Lock()
	prg, ok := c.m[expr]
	c.mu.Unlock()
	if ok {
		return prg, nil
	}
	e, err := c.env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, errConditionType
	}
	prg, err = e.Program(ast, cel.CostLimit(MaxConditionCost))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= conditionCacheSize {
		clear(c.m)
	}
	c.m[expr] = prg
	c.mu.Unlock()
	return prg, nil
}

// conditionHolds reports whether expr is true for the call.
func conditionHolds(expr string, params map[string]any, permission string, now time.Time) bool {
	prg, err := compileCondition(expr)
	if err != nil {
		return false
	}
	if params == nil {
		params = map[string]any{}
	}
	out, _, err := prg.Eval(map[string]any{
		"params":     params,
		"permission": permission,
		"now":        now,
	})
	if err != nil {
		return false
	}
	return out == types.True
}

// An event condition is a trigger's: a CEL expression that must be true of an event for the
// trigger to fire. It is a condition in the same environment as a token's, the same
// functions, limits and cost, with the variable event (a map from string to any JSON value:
// the event's payload, untrusted data) in place of params. An evaluation error or a result
// that is not a bool is a refusal, as for a token's.

var (
	eventEnvOnce sync.Once
	eventEnv     *cel.Env
	eventEnvErr  error
)

func envOfEvents() (*cel.Env, error) {
	eventEnvOnce.Do(func() {
		eventEnv, eventEnvErr = newEnv("event")
	})
	return eventEnv, eventEnvErr
}

// CompileEventCondition reports whether expr is a condition a trigger may carry: it parses,
// its type is bool, and it uses only event, permission, now and CEL's standard functions.
func CompileEventCondition(expr string) error {
	_, err := eventPrograms.compile(expr)
	return err
}

// EventConditionHolds reports whether expr is true of the event. An error says why it could
// not be evaluated (a missing key, a wrong type, the cost limit): the trigger does not fire
// then, and the error is for its record, in CEL's words (which may quote the expression,
// never the event's values).
func EventConditionHolds(expr string, event map[string]any, permission string, now time.Time) (bool, error) {
	prg, err := eventPrograms.compile(expr)
	if err != nil {
		return false, err
	}
	if event == nil {
		event = map[string]any{}
	}
	out, _, err := prg.Eval(map[string]any{"event": event, "permission": permission, "now": now})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, errConditionType
	}
	return bool(b), nil
}
