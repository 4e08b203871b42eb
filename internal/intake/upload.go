package intake

import "path/filepath"

// maxUploads bounds the uploads remembered: past it, they are all
// forgotten (taken by another node, most likely) and injected as the
// watcher's.
const maxUploads = 1000

// Uploading remembers that actor drops the file at path, so that its
// batch is audited under actor.
func (in *Intake) Uploading(path, actor string) (undo func()) {
	path = filepath.Clean(path)
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.uploads) >= maxUploads {
		clear(in.uploads)
	}
	in.uploads[path] = actor
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		delete(in.uploads, path)
	}
}

// uploader is who uploaded the file name of folder dir, if it came
// through the console. It is forgotten once the file is moved away.
func (in *Intake) uploader(dir, name string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.uploads[filepath.Join(filepath.Clean(dir), name)]
}
