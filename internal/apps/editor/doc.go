// Package editor is the Editor app of the token document as a Tier 1 app: one text buffer
// (file name, content, modified flag, line count, cursor) that open_file loads from a file,
// get_buffer reads, set_buffer replaces and save_file writes back.
//
// Every file it touches lies under one folder, the root given to New, and is reached through
// an os.Root, so that neither "..", nor a symbolic link in the folder pointing out of it, nor a
// symlinked parent, can take a call outside. A path param is either absolute, and then must
// lie under the root once cleaned, or relative to the root.
//
// It is not a general file manager: it reads and writes regular UTF-8 text files of at most
// MaxFileBytes, never folders, devices or pipes, makes no folders and deletes nothing (an undone
// save of a new file excepted). It acts on its own model only: no rendered surface, no UI
// automation. Undo records live in memory, so a restart forgets them.
package editor
