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

	sqlite3 "github.com/mattn/go-sqlite3"
)

// writerDriver opens the writer connection: SQLite's own driver, with a
// page cache of writerCacheKiB and the WAL checkpointed after
// walCheckpointPages pages rather than the default 1,000.
//
// The tasks of a file change pages all over the tasks' indexes. With
// SQLite's default cache (2 MB) a transaction of 10,000 of them in no
// particular key order spilled the same pages to the WAL again and again,
// and took twice as long. And a commit that checkpoints copies every page
// written since the last checkpoint: after 10,000 tasks, 200 to 300 ms
// that would fall on whichever commit crosses the line, a burst of fires
// due or not. The Recorder checkpoints itself, once the scheduler fires on
// time (see Checkpoint).
const writerDriver = "sqlite3-jobdrop-writer"

// writerCacheKiB is the writer's page cache, in KiB as SQLite takes a
// negative cache_size: 32 MiB at most.
const writerCacheKiB = 32 << 10

// walCheckpointPages is where the writer's commits checkpoint the WAL by
// themselves (40 MB of 4 KiB pages): a bound for a store written without
// a Recorder to checkpoint it.
const walCheckpointPages = 10_000

func init() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = "+strconv.Itoa(walCheckpointPages)+
			"; PRAGMA cache_size = -"+strconv.Itoa(writerCacheKiB), nil)
		return err
	}})
}

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
//
// The database file can be deleted or replaced while the store is open:
// Replaced tells, and Reopen opens the file now at the path (a new, empty
// one when it is gone), which the Recorder then fills from the topics.
type Store struct {
	path string

	// mu is held for reading while the connections are in use, and for
	// writing to replace or close them.
	mu     sync.RWMutex
	write  *sql.DB
	read   *sql.DB
	file   os.FileInfo // the database file as opened
	closed bool
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
	s := &Store{path: path}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

// open opens the connections on the file at s.path; s.mu is held or s is
// not shared yet.
func (s *Store) open() error {
	path := s.path
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("open store: %w", err)
		}
	}
	common := "_busy_timeout=" + strconv.Itoa(busyTimeoutMillis) + "&_foreign_keys=on"
	write, err := sql.Open(writerDriver, path+"?"+common+"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("open store %s: %w", path, err)
	}
	// One writer: SQLite serialises writers anyway, and one connection
	// makes "begin" never wait on ourselves.
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	if err := migrate(context.Background(), write); err != nil {
		write.Close()
		return fmt.Errorf("open store %s: %w", path, err)
	}
	file, err := os.Stat(path)
	if err != nil {
		write.Close()
		return fmt.Errorf("open store: %w", err)
	}
	// Readers open the file only if it exists (mode=rw): one that opened
	// after the file was deleted would create an empty one at the path.
	read, err := sql.Open("sqlite3", "file:"+uriPath(path)+"?mode=rw&"+common+"&_query_only=true")
	if err != nil {
		write.Close()
		return fmt.Errorf("open store %s: %w", path, err)
	}
	read.SetMaxOpenConns(readConns)
	read.SetMaxIdleConns(readConns)
	if err := read.Ping(); err != nil {
		write.Close()
		read.Close()
		return fmt.Errorf("open store %s: %w", path, err)
	}
	s.write, s.read, s.file = write, read, file
	return nil
}

// uriPath escapes path for a "file:" URI, as SQLite decodes it. Open
// refuses paths with '?'.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "#", "%23").Replace(path)
}

// Checkpoint copies what the WAL holds into the database file, as far as
// readers let it (SQLite's PASSIVE checkpoint).
func (s *Store) Checkpoint(ctx context.Context) error {
	db, done := s.writer()
	defer done()
	var busy, pages, checkpointed int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &pages, &checkpointed); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// reader returns the read pool, usable until done is called.
func (s *Store) reader() (db *sql.DB, done func()) {
	s.mu.RLock()
	return s.read, s.mu.RUnlock
}

// writer returns the writer connection, usable until done is called.
func (s *Store) writer() (db *sql.DB, done func()) {
	s.mu.RLock()
	return s.write, s.mu.RUnlock
}

// Replaced says whether the file at the store's path is no longer the one
// it has open: deleted (by hand, or by a clean-up that thought it a cache)
// or replaced by another file, such as a copy restored from a backup. It
// is nil while the file is the one opened, or when the path cannot be
// looked at.
func (s *Store) Replaced() error {
	now, err := os.Stat(s.path)
	s.mu.RLock()
	opened, closed := s.file, s.closed
	s.mu.RUnlock()
	switch {
	case closed || opened == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the database file %s was deleted", s.path)
	case err == nil && !os.SameFile(now, opened):
		return fmt.Errorf("the database file %s was replaced by another file", s.path)
	}
	return nil
}

// Reopen closes the database and opens the file now at the store's path,
// or a new one when there is none. It waits for the queries under way;
// queries asked meanwhile wait for it. Should opening fail, queries fail
// until a Reopen succeeds.
func (s *Store) Reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("reopen store %s: closed", s.path)
	}
	_ = s.closeConns() // the file is gone or replaced: nothing to keep
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		// The write-ahead log and shared memory of a deleted database
		// would be taken for the new one's.
		for _, f := range []string{s.path + "-wal", s.path + "-shm"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("reopen store: %w", err)
			}
		}
	}
	return s.open()
}

// closeConns closes the connections; s.mu is held.
func (s *Store) closeConns() error {
	var errs []error
	for _, db := range []*sql.DB{s.read, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	s.file = nil
	return errors.Join(errs...)
}

// Close closes the database. Calling it again does nothing and returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.closeConns(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
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
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("migrate: database schema version %d is newer than this program's %d", current, len(ms))
	}
	for _, m := range ms[current:] {
		tx, err := db.BeginTx(ctx, nil)
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
