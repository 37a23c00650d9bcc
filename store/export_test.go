package store

// TaskFieldLog is the task hash's field that keeps the task's log, for the
// tests that write a task as an older version kept it.
const TaskFieldLog = taskFieldLog
