package store

// AppColumns are an app's columns in both schemas, in the order ScanApp reads them.
const AppColumns = `app_id, alias, tier, reason, manifest, enabled, updated`

// AppRow is an App as its columns hold it: Manifest never nil, Updated as TimeCol has it.
type AppRow struct {
	AppID, Alias string
	Tier         int
	Reason       string
	Manifest     []byte
	Enabled      bool
	Updated      NullInt
}

// Args is r's columns in AppColumns order, as the arguments of a statement of n's driver.
func (r AppRow) Args(n NullTypes) []any {
	return []any{r.AppID, r.Alias, r.Tier, r.Reason, r.Manifest, r.Enabled, n.IntArg(r.Updated)}
}

// AppRowOf checks a as PutApp takes it and returns its columns: Updated a time TimeCol
// holds.
func AppRowOf(a App) (AppRow, error) {
	updated, err := TimeCol("app.Updated", a.Updated)
	if err != nil {
		return AppRow{}, err
	}
	return AppRow{AppID: a.AppID, Alias: a.Alias, Tier: a.Tier, Reason: a.Reason,
		Manifest: Blob(a.Manifest), Enabled: a.Enabled, Updated: updated}, nil
}

// ScanApp reads a row of AppColumns.
func ScanApp(sc Scanner, n NullTypes) (App, error) {
	var r AppRow
	if err := sc.Scan(&r.AppID, &r.Alias, &r.Tier, &r.Reason, &r.Manifest, &r.Enabled, n.Int(&r.Updated)); err != nil {
		return App{}, err
	}
	return App{AppID: r.AppID, Alias: r.Alias, Tier: r.Tier, Reason: r.Reason, Manifest: r.Manifest,
		Enabled: r.Enabled, Updated: r.Updated.Time()}, nil
}
