package web_test

import (
	"os"
	"testing"
)

// TestMain removes what the benchmarks filled once for the whole process
// (BenchmarkConsolePages's store).
func TestMain(m *testing.M) {
	code := m.Run()
	closeBenchNight()
	os.Exit(code)
}
