// Package web is jobdrop's console: server-rendered pages (templ
// components, one layout, a handler, model and view per route), the JSON
// API under /api/ and light-scheduler's /schedulers, login and roles, the
// audit exports, uploads, live updates over server-sent events, and the
// embedded static files (stylesheet, htmx, live.js).
//
// It reads through Source, a narrow interface it owns and the store
// implements, and writes only through Commander, which the injector
// implements: every change goes to Kafka's input, status and audit
// topics, never to the database. It does not import the store, so it
// carries no database dependency. Pages load scripts from /static only,
// never inline and never from elsewhere (the Content-Security-Policy says
// so), and every value is escaped by templ.
package web
