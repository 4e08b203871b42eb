package api

import (
	"net/http"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/web/list"
)

// The JSON API answers with the same data as the pages. Lists take the
// pages' filters and answer one page as a JSON array, never null, with
// the total and the links to the pages around it in headers; times are
// RFC 3339 UTC strings.

func (s *Server) apiSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.src.Summary(r.Context(), s.now())
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, sum)
}

// apiFiles lists the files, recorded or on their way in, as the files
// page does.
func (s *Server) apiFiles(w http.ResponseWriter, r *http.Request) {
	f, err := s.lists.Files(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.src.Files(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writePage(s, w, r, list.FileParams, p, p.Rows)
}

// apiArrivals lists the files on their way in, and those that failed before
// their content was recorded.
func (s *Server) apiArrivals(w http.ResponseWriter, r *http.Request) {
	_, _, limit, err := s.lists.Page(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	arrivals, err := s.src.RecentArrivals(r.Context(), limit)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, NonNil(arrivals))
}

func (s *Server) apiFile(w http.ResponseWriter, r *http.Request) {
	f, err := s.src.BatchByID(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, f)
}

func (s *Server) apiTasks(w http.ResponseWriter, r *http.Request) {
	f, err := s.lists.Tasks(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.src.Tasks(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writePage(s, w, r, list.TaskParams, p, p.Rows)
}

func (s *Server) apiTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.src.TaskByKey(r.Context(), r.PathValue("key"))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, t)
}

// apiExecutions lists executions as the executions page does; an overdue
// one says OVERDUE, with the status recorded beside it.
func (s *Server) apiExecutions(w http.ResponseWriter, r *http.Request) {
	f, err := s.lists.Executions(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.src.Executions(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	rows := make([]storetype.Execution, 0, len(p.Rows))
	for _, e := range p.Rows {
		rows = append(rows, e.AsOf(f.Now))
	}
	writePage(s, w, r, list.ExecutionParams, p, rows)
}

func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request) {
	f, err := s.lists.Audit(r.URL.Query())
	if err != nil {
		Error(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := s.src.Audit(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	writePage(s, w, r, list.AuditParams, p, p.Rows)
}
