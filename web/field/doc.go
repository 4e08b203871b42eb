// Package field makes a value a client sent fit for the audit trail and
// the log: valid UTF-8, no control or bidirectional formatting character
// left to forge a line or drive a terminal, and bounded in length, so
// that no client makes a record large. The console's server and its API
// both clean what they record through it, the one way.
//
// It must not import anything of the console.
package field
