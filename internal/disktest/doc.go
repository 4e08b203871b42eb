// Package disktest gives tests a small, real file system they can fill up:
// a tmpfs mounted for the test. Mounting needs root or CAP_SYS_ADMIN;
// where it is refused, the test is skipped and says why.
package disktest
