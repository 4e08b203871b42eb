// Package suggestion finds what a misspelt name was meant to be, for the
// "did you mean" of an error message.
package suggestion
