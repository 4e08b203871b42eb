// Package report writes tables exported whole, as CSV or as a one-sheet
// Excel workbook, streamed one row at a time so that an export of any
// length holds a few hundred rows in memory at most. It owns the cell
// types (text, numbers, times), the neutralising of cells a spreadsheet
// would read as formulas, and the sheet writer.
//
// It knows nothing of HTTP, of the console or of the store: a Report
// brings its rows through a callback, and the caller sets the answer's
// headers and decides what a failure part way means. It must not import
// the web package or anything that reads the data.
package report
