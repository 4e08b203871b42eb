package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// hashPassword reads a password, the first line of stdin, and prints its
// bcrypt hash for console.users[].password_hash.
func hashPassword(stdin io.Reader, stdout io.Writer, args []string) error {
	if len(args) > 0 {
		return errors.New("hash-password reads the password from stdin and takes no arguments (a password on the command line ends up in the shell history)")
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
	h, err := bcrypt.GenerateFromPassword([]byte(pw), 12)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(h))
	return err
}
