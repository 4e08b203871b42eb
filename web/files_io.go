package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/internal/record"
	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
)

// maxUpload bounds an upload's body: the file and its form.
const maxUpload = 64 << 20

// plainName reports whether name is a bare file name, safe to join to a
// folder: no separator, not "." or "..", not hidden.
func plainName(name string) bool {
	return name != "" && name == filepath.Base(name) && !strings.ContainsAny(name, `/\`+"\x00") &&
		!strings.HasPrefix(name, ".") && len(name) <= 255
}

// watchedFolder returns the configured folder dir names, if any.
func (s *Server) watchedFolder(dir string) (string, bool) {
	for _, f := range s.cfg.Folders {
		if filepath.Clean(f) == filepath.Clean(dir) {
			return f, true
		}
	}
	return "", false
}

// openKept opens the file of b, or with suffix ".errors.txt" its error
// report: where the watchers recorded moving it, newest first, else under
// its dropped name in its folder's archive/ or failed/, as long as the
// file there has b's content (files recorded before moves were; an
// earlier file may hold the name).
func (s *Server) openKept(b storetype.Batch, suffix string) (*os.File, error) {
	for _, p := range b.Kept {
		if f, err := s.openIn(filepath.Dir(filepath.Dir(p)), filepath.Base(filepath.Dir(p)), filepath.Base(p)+suffix); err == nil {
			return f, nil
		}
	}
	subs := []string{"archive", "failed"}
	if b.Status == storetype.BatchRejected {
		subs = []string{"failed", "archive"}
	}
	for _, sub := range subs {
		if !s.holds(b, sub) {
			continue
		}
		if f, err := s.openIn(b.Folder, sub, b.File+suffix); err == nil {
			return f, nil
		}
	}
	return nil, fs.ErrNotExist
}

// openIn opens the regular file name in the archive/ or failed/ subfolder
// sub of the watched folder dir, and nowhere else: os.Root keeps the
// lookup inside the subfolder whatever the name holds.
func (s *Server) openIn(dir, sub, name string) (*os.File, error) {
	dir, ok := s.watchedFolder(dir)
	if !ok || (sub != "archive" && sub != "failed" && sub != "held") || !plainName(name) {
		return nil, fs.ErrNotExist
	}
	root, err := os.OpenRoot(filepath.Join(dir, sub))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// holds reports whether the file under b's dropped name in sub has b's
// content, whose SHA-256 is b's id.
func (s *Server) holds(b storetype.Batch, sub string) bool {
	f, err := s.openIn(b.Folder, sub, b.File)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != b.Size {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == b.ID
}

// download serves the file of the batch named in the path, or with suffix
// ".errors.txt" its error report, under the name it was dropped as.
func (s *Server) download(w http.ResponseWriter, r *http.Request, suffix, ctype string) {
	b, err := s.src.BatchByID(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := s.openKept(b, suffix)
	if err != nil {
		s.page(w, r, http.StatusNotFound, "Not found", "files", messageView("Not kept", "jobdrop keeps the files it takes from a watched folder in that folder's archive/ or failed/ subfolder, and this one is not there: it was moved or deleted since, or it was injected with jobdrop inject, which leaves the file where it was."))
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": b.File + suffix}))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// downloadOriginal serves the file as it was dropped.
func (s *Server) downloadOriginal(w http.ResponseWriter, r *http.Request) {
	s.download(w, r, "", "application/octet-stream")
}

// downloadErrors serves a rejected file's error report.
func (s *Server) downloadErrors(w http.ResponseWriter, r *http.Request) {
	s.download(w, r, ".errors.txt", "text/plain; charset=utf-8")
}

// previewRow is one row of an upload's dry run.
type previewRow struct {
	Line   int
	Key    string
	Action string
	// Effect is what the row would do to its task against what runs now
	// ("adds it", "changes it", "unchanged", …), once the file was
	// compared; empty when it could not be.
	Effect    string
	Topic     string
	Schedule  string
	NextFires []time.Time
	Err       string
}

// uploadModel is the upload page: the form and, after a dry run, what the
// file would create.
type uploadModel struct {
	Enabled  bool
	DryRun   bool
	Name     string
	Rows     []previewRow
	Bad      int
	Message  string
	Problem  string
	Previews bool
	// Diff is what the file would change of what runs now, after a dry
	// run, with its first changes.
	Diff      *record.Diff
	DiffLines []string
	// CanUpload is false for a role that may only dry-run (CanDryRun),
	// or not even that.
	CanUpload, CanDryRun bool
}

// uploadModel is the upload page before anything was sent.
func (s *Server) uploadModel(r *http.Request) uploadModel {
	return uploadModel{Enabled: s.cfg.UploadDir != "", Previews: s.cfg.Preview != nil, CanUpload: s.canDefine(r), CanDryRun: s.canOperate(r)}
}

func (s *Server) uploadForm(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, http.StatusOK, "Upload", "upload", uploadView(s.uploadModel(r)))
}

// upload drops a file into the upload folder, where the watcher picks it
// up like any other, or with dryrun=1 shows what it would create. The
// form is read as it arrives: the file goes straight to its staging file
// in the upload folder, never whole into memory or the temporary folder.
// A dry run takes an operator; a drop creates and replaces definitions,
// which takes auth.DefineRole.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if !s.allow(w, r, auth.Operator) {
		return
	}
	m := s.uploadModel(r)
	if !m.Enabled {
		s.page(w, r, http.StatusServiceUnavailable, "Upload", "upload", uploadView(m))
		return
	}
	problem := func(status int, msg string) {
		m.Problem = msg
		s.page(w, r, status, "Upload", "upload", uploadView(m))
	}
	var up *staged
	defer func() {
		if up != nil {
			os.Remove(up.path)
		}
	}()
	mr, err := r.MultipartReader()
	for err == nil {
		var part *multipart.Part
		if part, err = mr.NextPart(); err != nil {
			break
		}
		switch part.FormName() {
		case "file":
			if up != nil {
				break // one file an upload
			}
			m.Name = filepath.Base(strings.ReplaceAll(part.FileName(), `\`, "/"))
			if !plainName(m.Name) {
				problem(http.StatusBadRequest, fmt.Sprintf("%q is not a usable file name.", part.FileName()))
				return
			}
			if s.cfg.NameProblem != nil {
				if why := s.cfg.NameProblem(m.Name); why != "" {
					problem(http.StatusBadRequest, "A file named "+m.Name+" would never be taken from the folder: "+why+".")
					return
				}
			}
			up, err = s.stage(part)
		case "dryrun":
			v, _ := io.ReadAll(io.LimitReader(part, 16))
			m.DryRun = len(v) > 0
		}
		part.Close()
	}
	switch {
	case isTooLarge(err):
		problem(http.StatusRequestEntityTooLarge, "The file is too large: at most "+byteSize(maxUpload)+".")
		return
	case err != nil && !errors.Is(err, io.EOF):
		if r.Context().Err() == nil && !isClientError(err) {
			s.log.Error("stage upload", "file", m.Name, "err", err)
			problem(http.StatusInternalServerError, "The file could not be stored; see the server log.")
			return
		}
		problem(http.StatusBadRequest, "The upload could not be read: "+firstLine(err.Error()))
		return
	case up == nil:
		problem(http.StatusBadRequest, "Choose a file to upload (at most "+byteSize(maxUpload)+").")
		return
	}
	if m.DryRun {
		if !s.dryRunSlot(w) {
			problem(http.StatusServiceUnavailable, fmt.Sprintf("%d dry runs are running already: try again in a moment.", s.cfg.DryRuns))
			return
		}
		defer s.dryRuns.Release(1)
		s.dryRun(r, up.path, &m)
		s.page(w, r, http.StatusOK, "Upload", "upload", uploadView(m))
		return
	}
	if !s.allow(w, r, auth.DefineRole) {
		return
	}
	dest := filepath.Join(s.cfg.UploadDir, m.Name)
	actor := auth.Who(r.Context()).Name
	undo := func() {}
	if s.cfg.Uploader != nil {
		undo = s.cfg.Uploader.Uploading(dest, actor)
	}
	// The rename makes the file appear whole to the watcher; an upload
	// never replaces a file waiting in the folder.
	err = fs.ErrExist
	if _, serr := os.Lstat(dest); errors.Is(serr, fs.ErrNotExist) {
		err = os.Rename(up.path, dest)
	}
	if err != nil {
		undo()
		status := http.StatusInternalServerError
		m.Problem = "The file could not be dropped into the folder; see the server log."
		if errors.Is(err, fs.ErrExist) {
			status, m.Problem = http.StatusConflict, "A file named "+m.Name+" is waiting in the folder already."
		} else {
			s.log.Error("drop upload", "file", m.Name, "err", err)
		}
		s.page(w, r, status, "Upload", "upload", uploadView(m))
		return
	}
	s.auditBatch(r, record.ActionFileUploaded, actor, m.Name, record.OutcomeOK,
		fmt.Sprintf("%d bytes into %s; what it did follows under its batch", up.size, s.cfg.UploadDir),
		&record.Batch{ID: up.sum, File: m.Name, Folder: s.cfg.UploadDir, Size: up.size})
	s.log.Info("file uploaded", "file", m.Name, "user", actor, "batch", up.sum)
	up = nil // dropped: nothing to remove
	http.Redirect(w, r, "/files?uploaded="+url.QueryEscape(m.Name), http.StatusSeeOther)
}

// isClientError reports whether err is the client's fault: a malformed
// multipart body, or one that ended early.
func isClientError(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || strings.HasPrefix(err.Error(), "multipart: ") ||
		errors.Is(err, http.ErrNotMultipart) || errors.Is(err, http.ErrMissingBoundary)
}

// dryRunSlot takes one of the Config.DryRuns slots, or says busy (with
// Retry-After) when none is free. Release it with s.dryRuns.Release(1).
func (s *Server) dryRunSlot(w http.ResponseWriter) bool {
	if s.dryRuns.TryAcquire(1) {
		return true
	}
	w.Header().Set("Retry-After", "5")
	return false
}

// stageNamed copies src under name into a hidden folder of the upload
// folder, which the watcher leaves alone; done removes it.
func (s *Server) stageNamed(src io.Reader, name string) (path string, done func(), err error) {
	dir, err := os.MkdirTemp(s.cfg.UploadDir, ".dryrun-")
	if err != nil {
		return "", nil, err
	}
	done = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = io.Copy(f, src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		done()
		return "", nil, err
	}
	return path, done, nil
}

// staged is an upload stored under a hidden name in the upload folder.
type staged struct {
	path string
	size int64
	// sum is the SHA-256 of the content: its batch id.
	sum string
}

// stage copies the upload to a hidden temporary file in the upload
// folder, which the watcher ignores, so that the drop is one rename.
func (s *Server) stage(src io.Reader) (*staged, error) {
	b := make([]byte, 8)
	rand.Read(b)
	tmp := filepath.Join(s.cfg.UploadDir, ".upload-"+hex.EncodeToString(b)+".part")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return &staged{path: tmp, size: n, sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// maxPreviewRows bounds the rows a dry run lists.
const maxPreviewRows = 500

func (s *Server) dryRun(r *http.Request, staged string, m *uploadModel) {
	if s.cfg.Preview == nil {
		m.Problem = "Dry runs are not available here."
		return
	}
	// Under its own name, in a hidden folder the watcher leaves alone, so
	// that what the converter says names the file the user sent.
	dir, err := os.MkdirTemp(s.cfg.UploadDir, ".dryrun-")
	if err != nil {
		s.log.Error("stage dry run", "file", m.Name, "err", err)
		m.Problem = "The file could not be stored; see the server log."
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, m.Name)
	if err := os.Rename(staged, path); err != nil {
		s.log.Error("stage dry run", "file", m.Name, "err", err)
		m.Problem = "The file could not be stored; see the server log."
		return
	}
	defer func() {
		if m.Problem != "" || m.Bad > 0 || s.cfg.Differ == nil {
			return
		}
		d, lines, err := s.cfg.Differ(r.Context(), "", m.Name, path)
		if err != nil {
			m.Problem = "The file could not be compared with what runs now: " + firstLine(err.Error())
			return
		}
		m.Diff, m.DiffLines = &d, lines[:min(len(lines), maxPreviewRows)]
		effects(m.Rows, d, lines)
		m.Message = fmt.Sprintf("Against what runs now: %d added, %d changed, %d removed, %d unchanged. Nothing was injected.",
			d.Added, d.Changed, d.Removed, d.Unchanged)
		if d.Held != "" {
			m.Message += " Dropped, it would be held for review: " + d.Held + "."
		}
	}()
	now := s.now()
	total := 0
	err = s.cfg.Preview(r.Context(), m.Name, path, func(line int, d task.Definition, err error) error {
		total++
		if err != nil {
			m.Bad++
		}
		if len(m.Rows) >= maxPreviewRows {
			return nil
		}
		row := previewRow{Line: line, Key: d.Key(), Action: string(d.Action), Topic: d.Topic}
		if err != nil {
			row.Err = err.Error()
		} else {
			row.Schedule = d.When()
			for _, ms := range d.Fires(now.UnixMilli(), s.cfg.PreviewFires) {
				row.NextFires = append(row.NextFires, task.Time(ms))
			}
		}
		m.Rows = append(m.Rows, row)
		return nil
	})
	switch {
	case err != nil:
		m.Problem = err.Error()
	case m.Bad > 0:
		m.Problem = fmt.Sprintf("%d of %d rows are invalid: the file would be rejected whole.", m.Bad, total)
	default:
		// Only the comparison with what runs now, deferred above, can
		// say whether a valid row creates, changes or leaves a task.
		m.Message = fmt.Sprintf("%d valid rows. Nothing was injected.", total)
	}
}

// effects says of each row what it would do to its task, from the lines of
// a diff: "row N: + …" adds it, "~" changes it, "-" deletes it. A row
// with no line is unchanged, when the lines hold every change; a TRIGGER
// row fires its task, whatever the diff counts it as.
func effects(rows []previewRow, d record.Diff, lines []string) {
	byRow := map[int]string{}
	for _, l := range lines {
		n, rest, ok := strings.Cut(strings.TrimPrefix(l, "row "), ": ")
		line, err := strconv.Atoi(n)
		if !ok || err != nil || !strings.HasPrefix(l, "row ") {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "+"):
			byRow[line] = "adds it"
		case strings.HasPrefix(rest, "~"):
			byRow[line] = "changes it"
		case strings.HasPrefix(rest, "-"):
			byRow[line] = "deletes it"
		}
	}
	whole := len(lines) >= d.Added+d.Changed+d.Removed
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Err != "":
		case r.Action == string(task.Trigger) || r.Action == string(task.Release):
			r.Effect = "fires it now"
		case r.Action == string(task.SkipRun):
			r.Effect = "skips its current run"
		case byRow[r.Line] != "":
			r.Effect = byRow[r.Line]
		case whole:
			r.Effect = "unchanged"
		}
	}
}
