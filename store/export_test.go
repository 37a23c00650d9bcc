package store

// TaskFieldLog is the task record's field that keeps the task's log, for the
// tests that write a task as an older version kept it.
const TaskFieldLog = taskFieldLog

// TaskFieldCommands is the task record's field that records its last
// commands without an Idempotency-Key.
const TaskFieldCommands = taskFieldCommands

// TaskCommandIDLen is the length of a command id a task record records.
const TaskCommandIDLen = taskCommandIDLen
