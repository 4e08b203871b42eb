// Package task owns the scheduler command a job list row becomes: the
// TaskDefinition of light-scheduler (field for field, so its JSON is accepted
// by light-scheduler's POST /schedulers) with jobdrop's additive extensions,
// its key, its validation and the computation of its fire times.
//
// It is pure: no I/O, no clock of its own (callers pass "now"), and no import
// of any other jobdrop package, so converter authors can depend on it alone.
package task
