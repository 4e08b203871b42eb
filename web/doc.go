// Package web is jobdrop's console server, the entry point cmd wires: the
// routes, the middleware every request passes (host check, cross-origin
// refusal, login, body bounds, security headers), the pages (templ
// components, one layout, a handler, model and view per route), the
// dashboard's timeline and charts and their JSON, uploads and dry runs,
// downloads of kept files, the report exports' routes, live updates over
// server-sent events, the probes, and the embedded static files
// (stylesheet, htmx, live.js).
//
// Its rooms, each a package that must not import this one:
//   - auth: roles, users, password checks, sessions, safe redirects;
//   - api: the JSON API and the light-scheduler and /api/v1/tasks shapes;
//   - list: a list's filters, order and page read from its URL;
//   - forecast: the next 24 hours of fires counted minute by minute;
//   - report: CSV and spreadsheet writing;
//   - field: cleaning what a client sent for the audit trail.
//
// It reads through Source, a narrow interface it owns and the store
// implements, and writes only through Commander, which command.Writer
// implements: every change goes to Kafka's input, status and audit
// topics, never to the database. It does not import the store, so it
// carries no database dependency. Pages load scripts from /static only,
// never inline and never from elsewhere (the Content-Security-Policy says
// so), and every value is escaped by templ.
package web
