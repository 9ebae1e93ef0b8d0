// Package files is the File Browser (Files) app of the token document as a Tier 1 app:
// list_directory, read_file, write_file and delete_file, plus create_file and
// create_directory, over one folder of the host given to New (the root).
//
// Every path is confined to the root through an os.Root, so that neither "..", nor a
// symbolic link pointing outside, nor an absolute link, nor a link swapped in while a call
// runs can reach anything beyond it. A path param is absolute (and then must lie under the
// root once cleaned) or relative to the root; a ".." segment is refused outright, because the
// gateway's token constraints resolve ".." after following links (as the kernel does) while a
// lexical clean would not, and the two must never disagree on which file a call touches.
//
// As os.Root documents, confinement is by name: a hard link or a bind mount that someone with
// other access placed inside the root reaches what it reaches. Agents cannot make either
// through this app.
//
// Changes are undoable within their window. Before write_file and delete_file change a file,
// the app copies what was there into an undo area inside the state folder given to New, which
// must lie outside the root so that no agent can read or forge it. An os.Root cannot rename
// across roots, so moving a file into the undo area is a copy (fsynced) followed by a removal
// through the root, and undoing is the reverse. The undo token is the record's random id;
// records older than their capability's undo_window_ms are purged on each call and by Purge.
//
// It is not a general file manager: it does not follow the host's view of other folders, does
// not recurse (delete_file removes a file, a symbolic link or an empty folder), does not
// change owners or modes, and acts on files only through the filesystem, never through a
// rendered surface. It imports none of the gateway.
package files
