package terminal

// AppID is the app's reverse-DNS id; Alias the name agents use.
const (
	AppID = "org.capgate.terminal"
	Alias = "terminal"
)

// The capability ids: the terminal domain, the app id and the token document's method name.
const (
	ExecuteID    = "terminal.org.capgate.terminal.execute_command"
	GetCwdID     = "terminal.org.capgate.terminal.get_cwd"
	ReadOutputID = "terminal.org.capgate.terminal.read_output"
	WriteInputID = "terminal.org.capgate.terminal.write_input"
	HistoryID    = "terminal.org.capgate.terminal.history"
)

// Manifest is the app's manifest, unsigned; the host signs it with its local app key. The
// bounds in its schemas are the ones of limits.go. Every param is classified for token
// constraints: command is a command line, cwd the folder it runs in, stdin text, and
// write_input's input command input, which a token with path or command constraints
// refuses (it may feed a shell, and no constraint can read it).
const Manifest = `{
  "app_id": "org.capgate.terminal",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "capabilities": [
    {
      "id": "terminal.org.capgate.terminal.execute_command",
      "name": "Run a command",
      "description": "Runs one command without a shell: its words are split by POSIX quoting, and pipes, redirections, ; && and $ expansions are refused. The environment holds only PATH, HOME, LANG and TERM. Runs in the terminal's folder, or in cwd under it. A non-zero exit is a result with status error; past its timeout the whole process group is killed and the call fails with TIMEOUT. With background, returns the command's id at once: write its input with write_input, read its output with read_output.",
      "category": "SYSTEM",
      "parameters": {"type": "object", "required": ["command"], "additionalProperties": false,
        "properties": {
          "command": {"type": "string", "minLength": 1, "maxLength": 16384, "format": "command"},
          "timeout": {"type": "integer", "minimum": 1, "maximum": 300000, "default": 30000},
          "capture_output": {"type": "boolean", "default": true},
          "cwd": {"type": "string", "minLength": 1, "maxLength": 4096, "format": "cwd"},
          "stdin": {"type": "string", "maxLength": 65536, "format": "text"},
          "background": {"type": "boolean", "default": false}}},
      "returns": {"type": "object", "required": ["status", "id"], "additionalProperties": false,
        "properties": {
          "status": {"enum": ["success", "error", "running"]},
          "id": {"type": "integer", "minimum": 1},
          "exit_code": {"type": "integer"},
          "stdout": {"type": "string"},
          "stderr": {"type": "string"},
          "duration_ms": {"type": "integer", "minimum": 0},
          "truncated": {"type": "boolean"}}},
      "side_effects": "system",
      "auth_level": "user",
      "permission": "app.terminal.execute",
      "risk": "high",
      "reversibility": "irreversible",
      "idempotency": "none",
      "timeout_ms": 310000
    },
    {
      "id": "terminal.org.capgate.terminal.get_cwd",
      "name": "Read the working folder",
      "description": "Answers the folder commands run in when they name no cwd.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "additionalProperties": false, "properties": {}},
      "returns": {"type": "object", "required": ["cwd"], "additionalProperties": false,
        "properties": {"cwd": {"type": "string"}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.terminal.read_output",
      "risk": "medium",
      "idempotency": "natural"
    },
    {
      "id": "terminal.org.capgate.terminal.read_output",
      "name": "Read a command's output",
      "description": "Answers the captured output and status of one of the caller's commands: the one with the given id, or the latest. A background command's output grows while it runs.",
      "category": "TEXT_QUERY",
      "parameters": {"type": "object", "additionalProperties": false,
        "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 9007199254740991}}},
      "returns": {"type": "object", "required": ["id", "command", "status", "stdout", "stderr", "truncated", "output_kept"], "additionalProperties": false,
        "properties": {
          "id": {"type": "integer", "minimum": 1},
          "command": {"type": "string"},
          "status": {"enum": ["running", "success", "error", "timeout", "cancelled"]},
          "exit_code": {"type": ["integer", "null"]},
          "stdout": {"type": "string"},
          "stderr": {"type": "string"},
          "truncated": {"type": "boolean"},
          "output_kept": {"type": "boolean"},
          "duration_ms": {"type": ["integer", "null"], "minimum": 0}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.terminal.read_output",
      "risk": "medium",
      "idempotency": "natural"
    },
    {
      "id": "terminal.org.capgate.terminal.write_input",
      "name": "Write to a command's input",
      "description": "Writes text to the standard input of one of the caller's running background commands; with close, ends its input afterwards. A token with path or command constraints refuses input (it cannot be checked); closing is allowed.",
      "category": "TEXT_INPUT",
      "parameters": {"type": "object", "required": ["id"], "additionalProperties": false,
        "properties": {
          "id": {"type": "integer", "minimum": 1, "maximum": 9007199254740991},
          "input": {"type": "string", "maxLength": 65536, "format": "command-input"},
          "close": {"type": "boolean", "default": false}}},
      "returns": {"type": "object", "required": ["id", "bytes_written", "closed"], "additionalProperties": false,
        "properties": {
          "id": {"type": "integer", "minimum": 1},
          "bytes_written": {"type": "integer", "minimum": 0},
          "closed": {"type": "boolean"}}},
      "side_effects": "write",
      "auth_level": "user",
      "permission": "app.terminal.write_input",
      "risk": "medium",
      "reversibility": "irreversible",
      "idempotency": "none"
    },
    {
      "id": "terminal.org.capgate.terminal.history",
      "name": "List recent commands",
      "description": "Lists the caller's recent commands, newest first, with their status, exit code, duration and start time.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "additionalProperties": false,
        "properties": {
          "count": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
          "offset": {"type": "integer", "minimum": 0, "maximum": 100, "default": 0}}},
      "returns": {"type": "object", "required": ["entries", "total"], "additionalProperties": false,
        "properties": {
          "total": {"type": "integer", "minimum": 0},
          "entries": {"type": "array", "maxItems": 100, "items": {"type": "object",
            "required": ["id", "command", "status", "exit_code", "duration_ms", "started_at", "background"], "additionalProperties": false,
            "properties": {
              "id": {"type": "integer", "minimum": 1},
              "command": {"type": "string"},
              "status": {"enum": ["running", "success", "error", "timeout", "cancelled"]},
              "exit_code": {"type": ["integer", "null"]},
              "duration_ms": {"type": ["integer", "null"], "minimum": 0},
              "started_at": {"type": "string", "format": "date-time"},
              "background": {"type": "boolean"}}}}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.terminal.history",
      "risk": "low",
      "idempotency": "natural"
    }
  ]
}`
