package store

import (
	"testing"
)

func TestOpenMigratesOnce(t *testing.T) {
	path := tempDB(t)
	for i := range 2 {
		st, err := Open(path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		var version int
		if err := st.read.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
			t.Fatal(err)
		}
		if version != SchemaVersion() || version < 1 {
			t.Errorf("schema version = %d, want %d", version, SchemaVersion())
		}
		var mode string
		if err := st.read.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal mode = %q (%v), want wal", mode, err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := tempDB(t)
	st := openStore(t, path)
	if _, err := st.write.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st2, err := Open(path); err == nil {
		st2.Close()
		t.Fatal("opened a database from a newer program")
	}
}

func TestReadPoolIsReadOnly(t *testing.T) {
	st := openStore(t, tempDB(t))
	if _, err := st.read.Exec(`DELETE FROM audit`); err == nil {
		t.Error("a read connection could write")
	}
}
