// Package pace lets the work of a node that can wait give way to its
// scheduler's fires. Files to inject and records to store for the console
// would otherwise take the CPU and the brokers from the fire loop when
// they come together with fires due, a burst of them above all: both wait
// while the scheduler fires late, at most MaxWait at a time, so that they
// always make headway however late it stays.
package pace
