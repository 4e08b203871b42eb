// Package forecast counts what fires over the next 24 hours, minute by
// minute, from every task's schedule, the way the engine computes fires
// (task.Definition's NextFire and Plan): in all, by host and by topic,
// with the minutes far busier than is typical (bursts) and what fires in
// them. Tasks that fire alike are counted together, within a memory
// budget, so a timeline of a million tasks takes seconds.
//
// It computes and nothing more: it must not read the store (the caller
// brings the schedules), keep time of its own beyond measuring how long
// a computation took, render, or import the web server package.
package forecast
