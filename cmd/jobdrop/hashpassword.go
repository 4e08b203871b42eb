package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// passwordCost is the bcrypt cost of hash-password: about a quarter of a
// second of one core per login check.
const passwordCost = 12

// hashPassword reads a password, the first line of stdin, and prints its
// bcrypt hash for console.users[].password_hash. --cost sets the bcrypt
// cost (12 by default).
func hashPassword(stdin io.Reader, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cost := fs.Int("cost", passwordCost, "bcrypt cost")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("hash-password: %w (it takes --cost N only)", err)
	}
	if fs.NArg() > 0 {
		return errors.New("hash-password reads the password from stdin and takes no other argument than --cost (a password on the command line ends up in the shell history)")
	}
	if *cost < bcrypt.MinCost || *cost > bcrypt.MaxCost {
		return fmt.Errorf("hash-password: --cost %d: bcrypt takes a cost of %d to %d", *cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return errors.New("hash-password: empty password on stdin")
	}
	if len(pw) > 72 {
		return errors.New("hash-password: bcrypt takes at most 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(h))
	return err
}
