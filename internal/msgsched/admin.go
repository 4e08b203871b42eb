package msgsched

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/jobdrop/jobdrop/internal/store/storetype"
	"github.com/jobdrop/jobdrop/task"
)

// Tasks lists the tasks the console knows.
type Tasks interface {
	EachTask(ctx context.Context, f storetype.TaskFilter, fn func(storetype.Task) error) error
}

// AdminConfig is what the admin REST tells.
type AdminConfig struct {
	Topics  []string
	History string
	Brokers []string
	// Listen is the address the admin REST answers on.
	Listen string
	// Live reports whether schedules are being read.
	Live  func() bool
	Tasks Tasks
}

// AdminRoutes are the patterns Admin serves.
var AdminRoutes = []string{"GET /liveness", "GET /info", "GET /schedules"}

// Admin answers the REST endpoints kafka-message-scheduler's admin page
// reads, in its JSON shapes: GET /info, GET /schedules (the schedules
// waiting to fire, by key; ?q= keeps those whose key holds it, ?limit=
// bounds them), GET /liveness.
func Admin(c AdminConfig) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(AdminRoutes[0], func(w http.ResponseWriter, _ *http.Request) {
		if !c.Live() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc(AdminRoutes[1], func(w http.ResponseWriter, _ *http.Request) {
		host, _ := os.Hostname()
		writeJSON(w, info{Hostname: host, Address: addresses(host), APIServerAddress: c.Listen,
			Kafka: kafkaInfo{BootstrapServers: strings.Join(c.Brokers, ","), Topics: c.Topics, HistoryTopic: c.History}})
	})
	mux.HandleFunc(AdminRoutes[2], func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		limit := -1
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				http.Error(w, fmt.Sprintf("limit %q: want a whole number of schedules, 0 or more", v), http.StatusBadRequest)
				return
			}
			limit = n
		}
		// Streamed, one schedule at a time: a topic may hold millions.
		enc := json.NewEncoder(w)
		started, n := false, 0
		for _, topic := range c.Topics {
			err := c.Tasks.EachTask(r.Context(), storetype.TaskFilter{Host: topic, Status: storetype.TaskLive, Sort: storetype.TaskSortKey},
				func(t storetype.Task) error {
					s, ok := scheduleOf(t)
					if !ok || !strings.Contains(s.ID, q) || limit >= 0 && n >= limit {
						return nil
					}
					if !started {
						w.Header().Set("Content-Type", "application/json; charset=utf-8")
						_, _ = io.WriteString(w, "[")
						started = true
					} else {
						_, _ = io.WriteString(w, ",")
					}
					n++
					return enc.Encode(s)
				})
			if err != nil && !started {
				http.Error(w, "cannot list the schedules: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			if err != nil {
				return // cut short: the answer is no valid JSON, which the client sees
			}
		}
		if !started {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, "[")
		}
		_, _ = io.WriteString(w, "]\n")
	})
	return mux
}

// Schedule is a schedule as kafka-message-scheduler's REST shows it.
type Schedule struct {
	ID          string `json:"id"`
	Epoch       int64  `json:"epoch"`
	Timestamp   int64  `json:"timestamp"`
	TargetTopic string `json:"target-topic"`
	TargetKey   string `json:"target-key"`
	Topic       string `json:"topic"`
	Value       []byte `json:"value"`
}

// scheduleOf is the schedule a task came from, if it came from one.
func scheduleOf(t storetype.Task) (Schedule, bool) {
	var d task.Definition
	if json.Unmarshal([]byte(t.Definition), &d) != nil || d.Message == nil || d.Start == nil {
		return Schedule{}, false
	}
	m := d.Message
	return Schedule{ID: string(m.From.Key), Epoch: *d.Start / 1000, Timestamp: m.From.Timestamp / 1000,
		TargetTopic: d.Topic, TargetKey: string(m.Key), Topic: m.From.Topic, Value: m.Value}, true
}

type info struct {
	Hostname         string    `json:"hostname"`
	Address          []string  `json:"address"`
	APIServerAddress string    `json:"api_server_address"`
	Kafka            kafkaInfo `json:"kafka"`
}

type kafkaInfo struct {
	BootstrapServers string   `json:"bootstrap_servers"`
	Topics           []string `json:"topics"`
	HistoryTopic     string   `json:"history_topic"`
}

// addresses are the IP addresses host resolves to; none when it does not.
func addresses(host string) []string {
	out := []string{}
	ips, _ := net.LookupIP(host)
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}
