// Package api serves the console's JSON API: the lists and records under
// /api/ (files, tasks, executions, audit), the writes (commands to tasks
// one by one or in bulk, workers' status reports and log lines, held
// files applied or rejected), and beside them the shapes of the
// schedulers jobdrop stands in for: light-scheduler's /schedulers and
// the synchronisation scheduler's /api/v1/tasks. Lists page as the
// console's do (package list); answers are JSON, errors {"error": …}.
//
// It reads through Source and writes only through Commander and
// Reviewer, never to the store. What it needs of the console serving it
// (role checks, the audit of its own events, streamed answers) it asks
// through Host: it must not import the web server package, render pages
// or decide who is logged in. The dashboard's own JSON (/api/activity,
// /api/timeline) and the dry run of a file (/api/diff) stay with the
// dashboard and the uploads they share their work with.
package api
