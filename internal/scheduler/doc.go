// Package scheduler is the engine: it consumes commands from the input
// topic, keeps every task's state in the compacted state topic, and fires
// each occurrence exactly once.
//
// The input partitions are shared by every instance of one consumer group.
// Each owned partition has a runner with its own transactional producer,
// whose id is derived from the partition: a new owner's first transaction
// fences the previous owner's producer, so an instance that lost a partition
// (crashed, paused past its session, partitioned away) can never commit a
// fire again. The runner then restores the partition's tasks from the state
// topic, up to a marker it committed itself, and resumes the input from the
// offset checkpointed with the state. A fire commits the target event, the
// execution record and the state update in one transaction.
//
// A runner holds its tasks in a table (table.go) built for a million of
// them: about a hundred bytes of memory per task, found by key hash, with
// each task's key and data in a spill file under Config.DataDir, unlinked
// as soon as it is opened. No goroutine or timer is kept per task: one
// heap orders a runner's tasks by next fire.
//
// The engine writes Kafka only; it keeps no database and serves no reads.
package scheduler
