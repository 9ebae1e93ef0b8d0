package files

// SetUndoLimits lowers the undo area's bounds, so that tests can fill it.
func SetUndoLimits(a *App, fileBytes, bytes int64, records int) {
	a.limits = undoLimits{fileBytes: fileBytes, bytes: bytes, records: records}
}

// UndoState is the undo area's index: records and bytes kept.
func UndoState(a *App) (records int, bytes int64) {
	a.sem <- struct{}{}
	defer a.unlock()
	return len(a.records), a.undoBytes
}

// MaxContentChars is the schema's bound on content.
const MaxContentChars = maxContentChars
