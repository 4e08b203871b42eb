//go:build race

package main

// raceDetector is set when the tests run with -race, which multiplies the
// memory a process takes and slows it several times: memory bounds, and
// time bounds measured outside jobdrop, are not checked then.
const raceDetector = true
