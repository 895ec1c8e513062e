package server

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/storage"
)

// infoSection is one "# Name" block of INFO.
type infoSection struct {
	name string
	// inDefault sections are printed by INFO without arguments (and INFO
	// default); the others only when named or with INFO all/everything.
	inDefault bool
	fields    func(s *Server, ks storage.Keyspace, now time.Time) [][2]string
}

// infoSections are INFO's sections in Redis 7's order.
var infoSections = []infoSection{
	{"Server", true, (*Server).infoServer},
	{"Clients", true, (*Server).infoClients},
	{"Memory", true, (*Server).infoMemory},
	{"Persistence", true, (*Server).infoPersistence},
	{"Stats", true, (*Server).infoStats},
	{"Replication", true, (*Server).infoReplication},
	{"CPU", true, (*Server).infoCPU},
	{"Modules", true, func(*Server, storage.Keyspace, time.Time) [][2]string { return nil }},
	{"Commandstats", false, (*Server).infoCommandstats},
	{"Errorstats", true, (*Server).infoErrorstats},
	{"Latencystats", false, (*Server).infoLatencystats},
	{"Cluster", true, func(s *Server, _ storage.Keyspace, _ time.Time) [][2]string {
		if s.cluster != nil {
			f := s.clusterFacts()
			return append([][2]string{{"cluster_enabled", "1"}, {"cluster_state", f.state},
				{"cluster_current_epoch", strconv.FormatInt(f.currentEpoch, 10)}}, f.redcell()...)
		}
		return [][2]string{{"cluster_enabled", "0"}}
	}},
	{"Keyspace", true, (*Server).infoKeyspace},
}

// info renders INFO in Redis's text format: "# Section" headers, "field:value"
// lines ending in CRLF, a blank line between sections. want holds lower-case
// section names; none means "default". Unknown names select nothing.
func (s *Server) info(ks storage.Keyspace, want []string, now time.Time) string {
	all, defaults := false, len(want) == 0
	for _, w := range want {
		switch w {
		case "all", "everything":
			all = true
		case "default":
			defaults = true
		}
	}
	var b strings.Builder
	for _, sec := range infoSections {
		if !all && !(defaults && sec.inDefault) && !contains(want, strings.ToLower(sec.name)) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, kv := range sec.fields(s, ks, now) {
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

func (s *Server) infoServer(ks storage.Keyspace, now time.Time) [][2]string {
	uptime := now.Sub(s.started)
	return [][2]string{
		{"redis_version", RedisVersion},
		{"redcell_version", Version},
		{"redis_mode", "standalone"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"run_id", s.runID},
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

// infoClients counts the connections, as blocked_clients those whose
// command waits on CLIENT PAUSE (Redis counts paused clients there too) or
// whose wrong password is answered late (client.waitLate), and
// as pubsub_clients those with a subscription (Redis 7.4's field).
func (s *Server) infoClients(ks storage.Keyspace, _ time.Time) [][2]string {
	s.mu.Lock()
	n, blocked := len(s.clients), 0
	for c := range s.clients {
		if c.waiting.Load() {
			blocked++
		}
	}
	s.mu.Unlock()
	_, _, _, subscribers := s.pubsubCounts()
	return [][2]string{
		{"connected_clients", strconv.Itoa(n)},
		{"maxclients", strconv.Itoa(s.limits.MaxClients)},
		{"blocked_clients", strconv.Itoa(blocked)},
		{"tracking_clients", itoa(s.tracking.clients.Load())},
		{"pubsub_clients", strconv.Itoa(subscribers)},
	}
}

// infoMemory reports the memory in use as the memory limit counts it
// (storage.Store.MeasureMemory: the Go runtime's and the keyspace's), which is what
// maxmemory is compared with, as Redis's used_memory is.
func (s *Server) infoMemory(ks storage.Keyspace, _ time.Time) [][2]string {
	used := ks.MeasureMemory()
	peak := s.peakMemory.Load()
	for used > peak && !s.peakMemory.CompareAndSwap(peak, used) {
		peak = s.peakMemory.Load()
	}
	peak = max(peak, used)
	rss := residentBytes()
	limit, policy := s.store.MemoryLimit()
	return [][2]string{
		{"used_memory", itoa(used)},
		{"used_memory_human", storage.BytesText(used)},
		{"used_memory_rss", itoa(rss)},
		{"used_memory_rss_human", storage.BytesText(rss)},
		{"used_memory_peak", itoa(peak)},
		{"used_memory_peak_human", storage.BytesText(peak)},
		{"total_system_memory", itoa(totalSystemMemory())},
		{"maxmemory", itoa(limit)},
		{"maxmemory_human", storage.BytesText(limit)},
		{"maxmemory_policy", policy.String()},
		{"mem_clients_normal", itoa(s.eng.OutputBytes())},
		// The replication stream's buffers, which maxmemory does not
		// count (storage.Store.SetUncounted), as Redis's.
		{"mem_replication_backlog", itoa(s.store.Uncounted())},
		{"mem_not_counted_for_evict", itoa(s.store.Uncounted())},
		{"mem_allocator", "go"},
		// CL.TOP's sketches: fixed, whatever the keys (top.Size a shard).
		{"redcell_top_memory", itoa(s.store.TopMemory())},
		// Bytes of used_memory in the arenas that no key needs, as of
		// the measure above (storage.Store.ArenaGarbage): a store at
		// rest gives them back (storage.Store.Tidy).
		{"redcell_arena_garbage", itoa(s.store.ArenaGarbage())},
	}
}

// unsavedChanges is rdb_changes_since_last_save: Persistence.Pending, exact,
// unless ks is a transaction's keyspace, whose shard locks are held (EXEC):
// then the store's count read through it, plus the flush's.
func (s *Server) unsavedChanges(ks storage.Keyspace, p Persistence) int {
	if ks == storage.Keyspace(s.store) {
		return p.Pending()
	}
	return ks.PendingChanges() + p.InFlight()
}

// infoPersistence reports flushing in the fields Redis users watch: the
// rdb_* fields describe redcell's flushes to Pebble.
func (s *Server) infoPersistence(ks storage.Keyspace, now time.Time) [][2]string {
	p := s.cfg.Persistence
	if p == nil {
		return [][2]string{
			{"loading", "0"},
			{"persistence_enabled", "0"},
			{"rdb_changes_since_last_save", itoa(int64(ks.PendingChanges()))},
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
		{"rdb_changes_since_last_save", itoa(int64(s.unsavedChanges(ks, p)))},
		{"rdb_bgsave_in_progress", inProgress},
		{"rdb_last_save_time", itoa(st.LastSave.Unix())},
		{"rdb_last_bgsave_status", status},
		{"rdb_last_bgsave_time_sec", itoa(int64(st.LastDuration / time.Second))},
		{"redcell_last_flush_usec", itoa(int64(st.LastDuration / time.Microsecond))},
		{"redcell_last_flush_keys", itoa(st.LastCount)},
		{"redcell_flushes", itoa(st.Flushes)},
		{"redcell_flush_failures", itoa(st.Failures)},
		{"redcell_disk_state", st.DiskState},
		{"redcell_flush_mode", s.appendfsyncParam()},
		{"redcell_loaded_keys", itoa(s.cfg.LoadedKeys)},
		{"redcell_load_usec", itoa(int64(s.cfg.LoadDuration / time.Microsecond))},
		{"aof_enabled", "0"},
	}
}

func (s *Server) infoStats(ks storage.Keyspace, _ time.Time) [][2]string {
	c := s.counters()
	channels, patterns, shardChannels, _ := s.pubsubCounts()
	repl := s.replicaStatus()
	trackedKeys, trackedItems, prefixes := s.tracking.counts()
	return [][2]string{
		{"total_connections_received", itoa(c.connections)},
		{"total_commands_processed", itoa(c.commandsProcessed)},
		{"instantaneous_ops_per_sec", itoa(c.instantaneousOpsPS)},
		{"rejected_connections", itoa(c.rejectedConns)},
		{"expired_keys", itoa(c.expiredKeys)},
		{"evicted_keys", itoa(s.store.Evicted())},
		{"keyspace_hits", itoa(c.hits)},
		{"keyspace_misses", itoa(c.misses)},
		{"pubsub_channels", strconv.Itoa(channels)},
		{"pubsub_patterns", strconv.Itoa(patterns)},
		{"pubsubshard_channels", strconv.Itoa(shardChannels)},
		{"sync_full", itoa(repl.SyncFull)},
		{"sync_partial_ok", itoa(repl.SyncPartialOK)},
		{"sync_partial_err", itoa(repl.SyncPartialErr)},
		{"tracking_total_keys", itoa(trackedKeys)},
		{"tracking_total_items", itoa(trackedItems)},
		{"tracking_total_prefixes", strconv.Itoa(prefixes)},
		{"total_error_replies", itoa(c.errorReplies)},
		{"acl_access_denied_auth", itoa(s.users.log.Denied(acl.DeniedAuth))},
		{"acl_access_denied_cmd", itoa(s.users.log.Denied(acl.DeniedCommand))},
		{"acl_access_denied_key", itoa(s.users.log.Denied(acl.DeniedKey))},
		{"acl_access_denied_channel", itoa(s.users.log.Denied(acl.DeniedChannel))},
		{"throttle_allowed", itoa(c.allowed)},
		{"throttle_limited", itoa(c.limited)},
		// Panics recovered by this process, its RESP connections' and
		// every other front's (contain.Record): Redis has no such field,
		// as it would have crashed.
		{"redcell_panics", itoa(contain.Recovered())},
	}
}

// infoCommandstats is Redis 7's per-command line:
// cmdstat_<name>:calls=N,usec=N,usec_per_call=N.NN,rejected_calls=N,failed_calls=N
func (s *Server) infoCommandstats(ks storage.Keyspace, _ time.Time) [][2]string {
	var out [][2]string
	for _, cs := range s.commandStats() {
		usec := int64(cs.latency.sum / time.Microsecond)
		perCall := 0.0
		if cs.latency.count > 0 {
			perCall = float64(cs.latency.sum) / float64(time.Microsecond) / float64(cs.latency.count)
		}
		out = append(out, [2]string{"cmdstat_" + cs.name,
			"calls=" + itoa(cs.latency.count) + ",usec=" + itoa(usec) +
				",usec_per_call=" + strconv.FormatFloat(perCall, 'f', 2, 64) +
				",rejected_calls=" + itoa(cs.rejected) + ",failed_calls=" + itoa(cs.failed)})
	}
	return out
}

// infoErrorstats counts error replies by their prefix, as Redis's
// errorstat_ERR:count=N.
func (s *Server) infoErrorstats(ks storage.Keyspace, _ time.Time) [][2]string {
	c := s.counters()
	var byPrefix []string
	counts := map[string]int64{}
	for i, k := range errorKinds {
		if c.errors[i] == 0 || k.prefix == "" {
			continue
		}
		if _, seen := counts[k.prefix]; !seen {
			byPrefix = append(byPrefix, k.prefix)
		}
		counts[k.prefix] += c.errors[i]
	}
	out := make([][2]string, 0, len(byPrefix))
	for _, p := range byPrefix {
		out = append(out, [2]string{"errorstat_" + p, "count=" + itoa(counts[p])})
	}
	return out
}

// infoLatencystats estimates each command's p50, p99 and p99.9 in
// microseconds from its latency histogram, in Redis 7's
// latency_percentiles_usec_<name>:p50=N,p99=N,p99.9=N.
func (s *Server) infoLatencystats(ks storage.Keyspace, _ time.Time) [][2]string {
	var out [][2]string
	usec := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 3, 64)
	}
	for _, cs := range s.commandStats() {
		if cs.latency.count == 0 {
			continue
		}
		out = append(out, [2]string{"latency_percentiles_usec_" + cs.name,
			"p50=" + usec(cs.latency.quantile(0.5)) + ",p99=" + usec(cs.latency.quantile(0.99)) +
				",p99.9=" + usec(cs.latency.quantile(0.999))})
	}
	return out
}

func (s *Server) infoCPU(storage.Keyspace, time.Time) [][2]string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil
	}
	secs := func(tv syscall.Timeval) string {
		return strconv.FormatFloat(float64(tv.Sec)+float64(tv.Usec)/1e6, 'f', 6, 64)
	}
	return [][2]string{{"used_cpu_sys", secs(ru.Stime)}, {"used_cpu_user", secs(ru.Utime)}}
}

// avgTTLSample is how many keys avg_ttl looks at, as Redis estimates it from
// the keys its expiry cycle samples.
const avgTTLSample = 256

func (s *Server) infoKeyspace(ks storage.Keyspace, now time.Time) [][2]string {
	n := int64(ks.Len())
	if n == 0 {
		return nil
	}
	// Every key has an expiry: its TAT. Keys are spread over shards by a
	// hash, so the first keys of the scan are a fair sample.
	var sumMs float64 // a float: a few far-future TATs would overflow a Duration
	var sampled int
	at := gcra.InstantOf(now)
	ks.Scan(0, avgTTLSample, at, func(_ []byte, tat gcra.Instant) {
		sumMs += float64(tat-at) / float64(time.Millisecond)
		sampled++
	})
	avg := int64(0)
	if sampled > 0 {
		avg = int64(sumMs / float64(sampled))
	}
	return [][2]string{{"db0", "keys=" + itoa(n) + ",expires=" + itoa(n) + ",avg_ttl=" + itoa(avg)}}
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
