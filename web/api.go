package web

import (
	"net/http"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
)

// The JSON API answers with the same data as the pages. Lists are JSON
// arrays, never null; times are RFC 3339 UTC strings.

func (s *Server) apiSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.src.Summary(r.Context())
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, sum)
}

func (s *Server) apiFiles(w http.ResponseWriter, r *http.Request) {
	limit, err := s.limitParam(r)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	files, err := s.src.RecentBatches(r.Context(), limit)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, nonNil(files))
}

// apiArrivals lists the files on their way in, and those that failed before
// their content was recorded.
func (s *Server) apiArrivals(w http.ResponseWriter, r *http.Request) {
	limit, err := s.limitParam(r)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	arrivals, err := s.src.RecentArrivals(r.Context(), limit)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, nonNil(arrivals))
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
	limit, err := s.limitParam(r)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	f, _, err := taskFilterParam(r, limit)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	tasks, err := s.src.Tasks(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, nonNil(tasks))
}

func (s *Server) apiTask(w http.ResponseWriter, r *http.Request) {
	t, err := s.src.TaskByKey(r.Context(), r.PathValue("key"))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, t)
}

func (s *Server) apiExecutions(w http.ResponseWriter, r *http.Request) {
	limit, err := s.limitParam(r)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	var executions []storetype.Execution
	if key := r.URL.Query().Get("task"); key != "" {
		executions, err = s.src.ExecutionsByTask(r.Context(), key, limit)
	} else {
		executions, err = s.src.RecentExecutions(r.Context(), limit)
	}
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, nonNil(executions))
}

func (s *Server) apiAudit(w http.ResponseWriter, r *http.Request) {
	limit, err := s.limitParam(r)
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	f, err := auditFilterParam(r.URL.Query())
	if err != nil {
		s.writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	f.Limit = limit
	events, err := s.src.Audit(r.Context(), f)
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, nonNil(events))
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (s *Server) apiActivity(w http.ResponseWriter, r *http.Request) {
	a, err := s.src.ActivitySince(r.Context(), s.now().Add(-time.Hour))
	if err != nil {
		s.apiFail(w, r, err)
		return
	}
	s.writeJSON(w, r, a)
}
