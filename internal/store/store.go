package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	// Registers the "sqlite3" driver.
	_ "github.com/mattn/go-sqlite3"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// busyTimeoutMillis is how long a connection waits for a lock (a WAL
// checkpoint, say) before it reports SQLITE_BUSY.
const busyTimeoutMillis = 5000

// readConns bounds the read pool.
const readConns = 4

// Store is a SQLite database holding jobdrop's view of its topics. It has
// one writer connection, used by the Recorder, and a small pool of read
// connections for queries; with WAL, readers never wait for the writer.
type Store struct {
	path  string
	write *sql.DB
	read  *sql.DB

	closeOnce sync.Once
}

// Open opens or creates the database at path, creating its folder if
// needed, and brings its schema up to date.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open store %s: path must not contain '?'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	common := "_busy_timeout=" + strconv.Itoa(busyTimeoutMillis) + "&_foreign_keys=on"
	write, err := sql.Open("sqlite3", path+"?"+common+"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// One writer: SQLite serialises writers anyway, and one connection
	// makes "begin" never wait on ourselves.
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	s := &Store{path: path, write: write}
	if err := s.migrate(context.Background()); err != nil {
		write.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	read, err := sql.Open("sqlite3", path+"?"+common+"&_query_only=true")
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	read.SetMaxOpenConns(readConns)
	read.SetMaxIdleConns(readConns)
	if err := read.Ping(); err != nil {
		write.Close()
		read.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.read = read
	return s, nil
}

// Path is the database file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close closes the database. Calling it again does nothing and returns nil.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		var errs []error
		if s.read != nil {
			errs = append(errs, s.read.Close())
		}
		errs = append(errs, s.write.Close())
		if joined := errors.Join(errs...); joined != nil {
			err = fmt.Errorf("close store %s: %w", s.path, joined)
		}
	})
	return err
}

// migration is one embedded schema change; applying it sets the schema
// version (PRAGMA user_version) to version.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in order. Their file names
// start with their version, 1-based and without gaps: 0001_init.sql,
// 0002_….sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with its version, as 0001_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the version of the newest embedded migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies, each in its own transaction, the migrations newer than
// the database's schema version.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := s.write.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("migrate: database schema version %d is newer than this program's %d", current, len(ms))
	}
	for _, m := range ms[current:] {
		tx, err := s.write.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		// PRAGMA takes no parameters; the version is our own integer.
		if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s: set schema version: %w", m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	return nil
}
