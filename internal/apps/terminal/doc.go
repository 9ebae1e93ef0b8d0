// Package terminal is the Terminal app of the token document as a Tier 1 app: execute_command,
// get_cwd, read_output, write_input and history, run on the app's own data model (child
// processes, their captured output and a bounded history), never through a rendered terminal.
//
// A command is split into its argument vector by token.SplitCommand, the one parser that the
// gateway's command constraints (allowed_commands, denied_commands, denied_patterns) check
// with, so the words a token checked are exactly the words that run. The vector runs without a
// shell, through os/exec: there are no pipes, redirections, globs, variables, command
// substitutions or ~ expansions, and a command holding an unquoted shell operator
// (; & | < > ( ) $ `) or a newline is refused before anything runs. A caller that needs a shell
// must name one (sh -c '...'), and a token with command or path constraints refuses it.
//
// Every command runs:
//
//   - from a program found in the fixed PATH (/usr/local/bin:/usr/bin:/bin) and nowhere else,
//     or at the path it names;
//   - with an environment of four variables and nothing of capgate's own: PATH, HOME (the
//     terminal's root folder), LANG=C.UTF-8 and TERM=dumb (and PWD, which the sandbox sets to
//     the working folder), so no token, key or credential of capgate's environment reaches it;
//   - in the root folder given to New, or in a folder under it named by the cwd param (which
//     is cleaned and resolved through its symbolic links first, and refused if it leaves the
//     root), and which the manifest marks "format": "cwd" so that token allowed_paths
//     constraints check it;
//   - in a session and process group of its own, with no controlling terminal: at its
//     timeout, when the call's context ends, or when the app closes, the whole group gets
//     SIGKILL, and the sandbox's pid namespace ends with it; when the command itself exits,
//     whatever it left running is killed too;
//   - with stdout and stderr each kept up to MaxOutputBytes (the rest is read and discarded,
//     and the result says truncated), and made valid UTF-8.
//
// A command that runs past its timeout fails with sdk.Timeout (the gateway answers TIMEOUT);
// what it wrote until then stays in the history, for read_output. A command that exits
// non-zero is a result with status "error", not a failure of the call; one a signal ended
// reports 128 and the signal's number, as shells do. A command refused by the quoting rules,
// a program that is not an executable file, and a cwd outside the root are invalid params
// naming the field (INVALID_REQUEST) and run nothing; a full table of running commands
// (MaxRunning, MaxSessions) is a recoverable ExecutionFailed.
//
// Every command gets an id, its place in the history (the last MaxHistory commands, with at
// most MaxRetainedOutputBytes of their output): read_output takes it, and write_input takes
// a background command's.
//
// execute_command with "background": true returns at once with the command's history id: its
// input is written with write_input and its output read with read_output while it runs. At
// most MaxSessions run at once; each is killed at its timeout and by Close.
//
// Each caller (sdk.InvocationContext.ClientID) sees only its own commands in history,
// read_output and write_input.
//
// Every command runs in a sandbox of its own (package sandbox, on bubblewrap): its own user,
// pid, network and ipc namespaces, no capability, no network, the system's programs
// read-only, the root folder as the only folder it can write, an in-memory /tmp, and nothing
// else of the host: not capgate's data folder, keys or configuration (Options.Hidden covers
// them even should the root hold them), not other processes. The command's whole process
// tree dies with it: a process that leaves its process group (setsid, a daemon) is killed
// when the command exits, at its timeout, when the call ends and when the app closes, since
// its pid namespace ends then. A program the sandbox cannot see (outside the system's view
// and the root) is refused before anything runs.
//
// What it is not: there is no interactive terminal (no pty), no shell state between commands
// (no cd, no variables) and no resource limits beyond time and captured output. Commands run
// only on Linux; elsewhere New fails.
package terminal
