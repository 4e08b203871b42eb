package kafkatest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// brokerProcessEnv names the data directory of a broker process: a test
// binary started with it set serves a broker instead of running tests.
const brokerProcessEnv = "JOBDROP_TEST_BROKER_DIR"

// ServeBrokerProcess, called first in a test binary's TestMain, makes the
// binary a standalone broker when BrokerProcess started it as one: a
// one-broker cluster persisted in its data directory, as jobdrop's
// embedded broker is, that prints its address and serves until its
// standard input closes, then exits. Otherwise it returns at once.
func ServeBrokerProcess() {
	dir := os.Getenv(brokerProcessEnv)
	if dir == "" {
		return
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(c.ListenAddrs()[0])
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	c.Close()
	os.Exit(0)
}

// BrokerProcess starts the test binary again as a standalone broker (see
// ServeBrokerProcess, which its TestMain must call) with its data under a
// temporary folder, stopped with the test, and returns its address. A
// broker in a process of its own keeps its CPU and memory apart from the
// process measured.
func BrokerProcess(tb testing.TB) []string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), brokerProcessEnv+"="+tb.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.HasPrefix(addr, "error") {
		tb.Fatalf("broker process: %v %s", err, addr)
	}
	return []string{strings.TrimSpace(addr)}
}
