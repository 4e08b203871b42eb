// Package list reads a list's filters, order and page from its URL
// (executions, tasks, files, audit), the same way for the console's
// pages, its exports and the JSON API: a URL is the list as it was seen,
// to share or bookmark. A page is a cursor into the list (?cursor=, from
// the page before), so it costs the same at the millionth row as at the
// first. It also writes the canonical query of a list and the links to
// the pages around one.
//
// It reads URLs into store filters and nothing more: it must not read
// the store, render anything or import the web server package.
package list
