// Package auth says who makes a console request and what they may do:
// roles and local users, password checks (bcrypt, the same cost for
// unknown names, throttled by user name and by client address, bounded
// in number at once), sessions kept in memory and their cookie, HTTP
// basic credentials remembered for a few minutes, the principal in a
// request's context, and the redirect targets a login may follow.
//
// It answers questions and reports failures through a callback; it must
// not write the audit trail, log, render pages or import the web server
// package: the server decides what a refusal looks like and audits it.
package auth
