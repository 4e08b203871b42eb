//go:build !race

package converters

// raceDetector is set when the tests run with -race, which slows parsing
// several times over: the streaming tests read smaller files then, still
// large enough that holding them would break their heap bounds.
const raceDetector = false
