package web

// SetSheetRowLimit lets the tests of exports reach a sheet's last row
// without a million events; it returns the function that restores it.
func SetSheetRowLimit(n int) (restore func()) {
	old := sheetRows
	sheetRows = n
	return func() { sheetRows = old }
}
