//go:build !linux

package watcher

import "context"

// moveWatch is absent where inotify is: files renamed in wait for the
// stability checks, unless their times show they came whole.
type moveWatch struct{}

func newMoveWatch() *moveWatch           { return nil }
func (m *moveWatch) add(*folder)         {}
func (m *moveWatch) run(context.Context) {}
