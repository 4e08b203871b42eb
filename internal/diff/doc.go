// Package diff computes what a new version of a sync source changes of the
// tasks its earlier versions created: which rows add a task, which change
// one, which leave one as it is, which tasks the new version no longer
// holds, and which of the tasks it deletes others still follow (after).
// It is pure: the caller reads the tasks that run now and the rows of the
// new version, and produces the commands.
package diff
