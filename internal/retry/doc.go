// Package retry owns every retry loop of jobdrop: calling something that
// fails for a while (brokers out of reach, a database that refuses writes,
// a folder that cannot be written) again after a wait that grows, until it
// works, the caller's context ends, the caller says the error is
// permanent, or the policy's bound on attempts or time is spent.
//
// It also owns the waits themselves (Backoff), so that a caller that
// schedules its next attempt on its own loop, like the scheduler's engine
// for a refused fire, spaces its attempts the same way.
//
// Every wait is logged in one shape: the caller's message with the keys
// err, attempt and delay_ms. The package never decides what is worth
// retrying: the caller does, through Permanent.
package retry
