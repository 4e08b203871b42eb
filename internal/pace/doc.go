// Package pace lets the work of a node that can wait give way to its
// scheduler's fires. Files to inject, records to store for the console and
// the dashboard's computations over every task would otherwise take the
// CPU and the brokers from the fire loop when they come together with
// fires due, a burst of them above all: they wait while the scheduler
// fires late, or has been writing a burst's transactions ahead of their
// due time that long (the scheduler's Urgency), at most MaxWait at a time,
// so that they always make headway however late it stays. Wait is the files' way; Background, which also
// leaves the fires' consumers a moment once the scheduler is on time
// again, the console's.
package pace
