package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// hostModel is one host's page: its chains, its tasks and its latest
// executions.
type hostModel struct {
	Now        time.Time
	Host       string
	Chains     chainGraph
	Tasks      storetype.Page[storetype.Task]
	Executions storetype.Page[storetype.Execution]
}

type hostHandler struct{ s *Server }

// ServeHTTP renders the page of the host /hosts/{host}: not found when
// the view holds no task and no execution of it.
func (h hostHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	m := hostModel{Now: h.s.now(), Host: r.PathValue("host")}
	var err error
	if m.Tasks, err = h.s.src.Tasks(ctx, storetype.TaskFilter{Host: m.Host, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Executions, err = h.s.src.Executions(ctx, storetype.ExecutionFilter{Host: m.Host, Now: m.Now, Limit: h.s.cfg.ListLimit}); err != nil {
		h.s.fail(w, r, err)
		return
	}
	if m.Tasks.Total == 0 && m.Executions.Total == 0 {
		h.s.fail(w, r, storetype.ErrNotFound)
		return
	}
	g, err := h.s.src.ChainGraph(ctx, storetype.ChainGraphFilter{Host: m.Host})
	if err != nil {
		h.s.fail(w, r, err)
		return
	}
	m.Chains = newChainGraph("chain-graph", g, m.Now, "host "+m.Host, func(n storetype.ChainNode) bool {
		host, _, _ := task.SplitKey(n.Key)
		return host == m.Host
	})
	h.s.page(w, r, http.StatusOK, "Host "+m.Host, "tasks", hostView(m))
}

// hostQuery selects a host's tasks or executions in a list.
func hostQuery(host string) url.Values { return url.Values{"host": {host}} }
