package python

// Manifest is the app's manifest, unsigned; the host signs it with its local app key.
//
// The execute capabilities declare no reversibility, so they are read as irreversible:
// nothing a script does can be undone, and nothing needs undoing, since a script reaches
// nothing outside its sandbox (side effects none; execute_file reads its script, so read).
// With side effects at read or below, the gateway adds no delayed-commit window. Their
// idempotency is natural: Starlark is deterministic, with no clock and no randomness.
//
// execute_file declares no filesystem_intents: its folder is chosen by the host at New, not
// fixed in a signed manifest. The document asks for fs.read beside app.python.execute; a
// capability has one permission, app.python.execute, and the token's allowed_paths
// constraints still apply to the path param.
const Manifest = `{
  "app_id": "org.capgate.python",
  "version": "1.0.0",
  "manifest_version": "1.0",
  "capabilities": [
    {
      "id": "python.org.capgate.python.execute_script",
      "name": "Run a Python script",
      "description": "Runs a script in Starlark, a small deterministic Python dialect, in a sandbox: no imports or load(), no files, environment, network or clock; the math and json modules are available. print output is captured (up to 1 MiB). Limits: 10,000,000 steps, 1000 nested calls, 512 MiB, timeout in ms (default 5000, at most 60000). Answers with the status, the output, the error with its line and column, the duration and the steps.",
      "category": "SYSTEM",
      "parameters": {"type": "object", "required": ["code"], "additionalProperties": false,
        "properties": {
          "code": {"type": "string", "maxLength": 262144, "format": "text"},
          "timeout": {"type": "integer", "minimum": 1, "maximum": 60000}}},
      "returns": ` + runAnswer + `,
      "side_effects": "none",
      "auth_level": "user",
      "permission": "app.python.execute",
      "risk": "high",
      "idempotency": "natural",
      "timeout_ms": 62000
    },
    {
      "id": "python.org.capgate.python.execute_file",
      "name": "Run a Python script file",
      "description": "Runs a .star or .py file from the scripts folder (a path under it, or relative to it) like execute_script: Starlark in a sandbox, the same limits and the same answer. The file is at most 256 KiB of UTF-8; paths that leave the folder, by .. or a symbolic link, are refused.",
      "category": "SYSTEM",
      "parameters": {"type": "object", "required": ["path"], "additionalProperties": false,
        "properties": {
          "path": {"type": "string", "minLength": 1, "maxLength": 4096, "format": "path"},
          "timeout": {"type": "integer", "minimum": 1, "maximum": 60000}}},
      "returns": ` + runAnswer + `,
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.python.execute",
      "risk": "high",
      "idempotency": "natural",
      "timeout_ms": 62000
    },
    {
      "id": "python.org.capgate.python.read_output",
      "name": "Read the last script output",
      "description": "Answers with the output and status of the caller's last script execution (none when it ran none): success, error, timeout or cancelled.",
      "category": "STATE_QUERY",
      "parameters": {"type": "object", "additionalProperties": false, "properties": {}},
      "returns": {"type": "object", "additionalProperties": false,
        "required": ["status", "output", "truncated", "error", "duration_ms", "steps"],
        "properties": {
          "status": {"enum": ["none", "success", "error", "timeout", "cancelled"]},
          "output": {"type": "string", "maxLength": 1048576},
          "truncated": {"type": "boolean"},
          "error": {"type": ["string", "null"], "maxLength": 4096},
          "duration_ms": {"type": "integer", "minimum": 0},
          "steps": {"type": "integer", "minimum": 0}}},
      "side_effects": "read",
      "auth_level": "user",
      "permission": "app.python.read_output",
      "risk": "medium",
      "idempotency": "natural",
      "timeout_ms": 5000
    }
  ]
}`

// runAnswer is the answer of execute_script and execute_file, which is one: a script's run
// answers the same whichever way the script came.
const runAnswer = `{"type": "object", "additionalProperties": false,
        "required": ["status", "output", "truncated", "error", "duration_ms", "steps"],
        "properties": {
          "status": {"enum": ["success", "error"]},
          "output": {"type": "string", "maxLength": 1048576},
          "truncated": {"type": "boolean"},
          "error": {"type": ["string", "null"], "maxLength": 4096},
          "duration_ms": {"type": "integer", "minimum": 0},
          "steps": {"type": "integer", "minimum": 0}}}`
