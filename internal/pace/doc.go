// Package pace lets the work of a node that can wait give way to its
// scheduler's fires. Files to inject, records to store for the console and
// the dashboard's computations over every task would otherwise take the
// CPU and the brokers from the fire loop when they come together with
// fires due, a burst of them above all: they wait while the scheduler
// fires late, or has been writing a burst's transactions ahead of their
// due time that long (the scheduler's Urgency), at most MaxWait at a time
// (the console's work MaxWait plus the scheduler's fire_ahead),
// so that they always make headway however late it stays. Wait is the
// files' way; Background the console's, which watches the scheduler's
// Pressure: its Urgency, and a moment more once a burst has committed,
// while the fires' consumers read it (Settle).
package pace
