package server

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// infoSection is one "# Name" block of INFO.
type infoSection struct {
	name   string
	fields func(s *Server, now time.Time) [][2]string
}

// infoSections are INFO's sections in Redis's order. The default set is
// every section here; "all" and "everything" are the same.
var infoSections = []infoSection{
	{"Server", (*Server).infoServer},
	{"Clients", (*Server).infoClients},
	{"Memory", (*Server).infoMemory},
	{"Persistence", (*Server).infoPersistence},
	{"Stats", (*Server).infoStats},
	{"Replication", (*Server).infoReplication},
	{"CPU", (*Server).infoCPU},
	{"Keyspace", (*Server).infoKeyspace},
}

// info renders INFO in Redis's text format: "# Section" headers, "field:value"
// lines ending in CRLF, a blank line between sections.
func (s *Server) info(want []string, now time.Time) string {
	all := len(want) == 0
	for _, w := range want {
		if w == "all" || w == "everything" || w == "default" {
			all = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !contains(want, strings.ToLower(sec.name)) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, kv := range sec.fields(s, now) {
			b.WriteString(kv[0])
			b.WriteByte(':')
			b.WriteString(kv[1])
			b.WriteString("\r\n")
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (s *Server) infoServer(now time.Time) [][2]string {
	uptime := now.Sub(s.started)
	return [][2]string{
		{"redis_version", RedisVersion},
		{"redcell_version", Version},
		{"redis_mode", "standalone"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"tcp_port", strconv.Itoa(s.cfg.Port)},
		{"server_time_usec", itoa(now.UnixMicro())},
		{"uptime_in_seconds", itoa(int64(uptime / time.Second))},
		{"uptime_in_days", itoa(int64(uptime / (24 * time.Hour)))},
		{"executable", executable()},
	}
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

func (s *Server) infoClients(time.Time) [][2]string {
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	return [][2]string{
		{"connected_clients", strconv.Itoa(n)},
		{"maxclients", "10000"},
		{"blocked_clients", "0"},
	}
}

func (s *Server) infoMemory(time.Time) [][2]string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss := residentBytes()
	return [][2]string{
		{"used_memory", itoa(int64(m.HeapAlloc))},
		{"used_memory_human", human(int64(m.HeapAlloc))},
		{"used_memory_rss", itoa(rss)},
		{"used_memory_rss_human", human(rss)},
		{"used_memory_peak", itoa(int64(m.HeapSys))},
		{"total_system_memory", itoa(totalSystemMemory())},
		{"maxmemory", "0"},
		{"maxmemory_policy", "noeviction"},
		{"mem_allocator", "go"},
	}
}

// infoPersistence reports flushing in the fields Redis users watch: the
// rdb_* fields describe redcell's flushes to Pebble.
func (s *Server) infoPersistence(now time.Time) [][2]string {
	p := s.cfg.Persistence
	if p == nil {
		return [][2]string{
			{"loading", "0"},
			{"persistence_enabled", "0"},
			{"rdb_changes_since_last_save", itoa(int64(s.store.PendingChanges()))},
			{"rdb_last_save_time", itoa(s.started.Unix())},
			{"rdb_last_bgsave_status", "ok"},
			{"aof_enabled", "0"},
		}
	}
	st := p.Stats()
	status := "ok"
	if !st.LastOK {
		status = "err"
	}
	inProgress := "0"
	if st.BackgroundSaving {
		inProgress = "1"
	}
	return [][2]string{
		{"loading", "0"},
		{"persistence_enabled", "1"},
		{"async_loading", "0"},
		{"rdb_changes_since_last_save", itoa(int64(s.store.PendingChanges()))},
		{"rdb_bgsave_in_progress", inProgress},
		{"rdb_last_save_time", itoa(st.LastSave.Unix())},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_bgsave_time_sec", itoa(int64(st.LastDuration / time.Second))},
		{"redcell_last_flush_usec", itoa(int64(st.LastDuration / time.Microsecond))},
		{"redcell_last_flush_keys", itoa(st.LastCount)},
		{"redcell_flushes", itoa(st.Flushes)},
		{"redcell_flush_mode", s.appendfsyncParam()},
		{"redcell_loaded_keys", itoa(s.cfg.LoadedKeys)},
		{"redcell_load_usec", itoa(int64(s.cfg.LoadDuration / time.Microsecond))},
		{"aof_enabled", "0"},
	}
}

func (s *Server) infoStats(time.Time) [][2]string {
	st := &s.stats
	return [][2]string{
		{"total_connections_received", itoa(st.connections.Load())},
		{"total_commands_processed", itoa(st.commands.Load())},
		{"rejected_connections", "0"},
		{"expired_keys", itoa(s.store.Expired())},
		{"evicted_keys", "0"},
		{"total_error_replies", itoa(st.errors.Load())},
		{"throttle_allowed", itoa(st.allowed.Load())},
		{"throttle_limited", itoa(st.limited.Load())},
	}
}

func (s *Server) infoReplication(time.Time) [][2]string {
	return [][2]string{{"role", "master"}, {"connected_slaves", "0"}}
}

func (s *Server) infoCPU(time.Time) [][2]string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil
	}
	secs := func(tv syscall.Timeval) string {
		return strconv.FormatFloat(float64(tv.Sec)+float64(tv.Usec)/1e6, 'f', 6, 64)
	}
	return [][2]string{{"used_cpu_sys", secs(ru.Stime)}, {"used_cpu_user", secs(ru.Utime)}}
}

func (s *Server) infoKeyspace(time.Time) [][2]string {
	n := int64(s.store.Len())
	if n == 0 {
		return nil
	}
	// Every key has an expiry: its TAT.
	return [][2]string{{"db0", "keys=" + itoa(n) + ",expires=" + itoa(n) + ",avg_ttl=0"}}
}

// residentBytes is the process's resident set size, from /proc on Linux.
func residentBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func totalSystemMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// human formats bytes as Redis's used_memory_human does: 1.50M.
func human(n int64) string {
	units := []string{"B", "K", "M", "G", "T"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return itoa(n) + "B"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + units[i]
}
