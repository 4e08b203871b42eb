// Package converters turns job list files into task definitions: the
// Converter interface, the explicit Registry that maps file patterns to
// converters, the column mapping every tabular format shares, and the
// built-in formats.
//
// Converters only read files and build commands; they never talk to Kafka
// and never move files.
package converters
