// Package web is jobdrop's console: server-rendered pages (templ
// components, one layout, a handler, model and view per route), the JSON
// API under /api/, and the embedded stylesheet.
//
// It reads through Source, a narrow interface it owns and the store
// implements; it never writes, never talks to Kafka, and does not import
// the store, so it carries no database dependency. Pages are plain HTML:
// no script, no CDN, nothing fetched from outside the binary.
package web
