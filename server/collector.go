package server

import (
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcell/redcell/internal/contain"
	"github.com/redcell/redcell/storage"
)

// Collector returns a Prometheus collector of the server's figures. It reads
// the counters when scraped; register it once per Server.
func (s *Server) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Server }

var (
	descDecisions = prometheus.NewDesc("redcell_decisions_total",
		"Rate-limit decisions by command (cl.throttle, gcra, cl.reserve, cl.window) and result: allowed or limited.", []string{"cmd", "result"}, nil)
	descHits = prometheus.NewDesc("redcell_keyspace_hits_total",
		"Commands that found their key live (CL.THROTTLE, GET, TTL, PTTL, TYPE, EXISTS), as Redis's keyspace_hits.", nil, nil)
	descMisses = prometheus.NewDesc("redcell_keyspace_misses_total",
		"Commands that found their key absent or expired, as Redis's keyspace_misses.", nil, nil)
	descErrors   = prometheus.NewDesc("redcell_errors_total", errorsHelp(), []string{"kind"}, nil)
	descCommands = prometheus.NewDesc("redcell_commands_total",
		"Commands run, by lower-case name; refused ones are not counted.", []string{"cmd"}, nil)
	descRejected = prometheus.NewDesc("redcell_commands_rejected_total",
		"Commands refused before running (wrong arity, NOAUTH), by name.", []string{"cmd"}, nil)
	descFailed = prometheus.NewDesc("redcell_commands_failed_total",
		"Commands that ran and replied with an error, by name.", []string{"cmd"}, nil)
	descLatency = prometheus.NewDesc("redcell_command_duration_seconds",
		"Time to serve a command, from dispatch until its reply is buffered, by name (cmd=\"cl.throttle\" is the rate-limit decision).", []string{"cmd"}, nil)
	descKeys = prometheus.NewDesc("redcell_keys",
		"Keys held, including expired keys not yet swept (DBSIZE).", nil, nil)
	descExpired = prometheus.NewDesc("redcell_expired_keys_total",
		"Keys removed because their TAT passed.", nil, nil)
	descPending = prometheus.NewDesc("redcell_pending_changes",
		"Changed keys waiting for the next flush to disk.", nil, nil)
	descConnected = prometheus.NewDesc("redcell_connected_clients",
		"Open client connections.", nil, nil)
	descConnections = prometheus.NewDesc("redcell_connections_received_total",
		"Client connections accepted.", nil, nil)
	descPanics = prometheus.NewDesc("redcell_panics_total",
		"Panics recovered by the process, by where: resp (a client's command: its connection was closed), rls (a rate limit call), replication, cluster, flush, expiry, memory (the memory watch), tidy (the arenas' tidying). Any is a bug to report.", []string{"where"}, nil)
	descRejectedConns = prometheus.NewDesc("redcell_rejected_connections_total",
		"Client connections refused (maxclients).", nil, nil)

	// Cluster mode's, only in cluster mode.
	descKeysByKind = prometheus.NewDesc("redcell_keys_by_kind",
		"Keys held by kind (string: a TAT; window; leases), expired ones not yet swept included.", []string{"kind"}, nil)
	descMemory = prometheus.NewDesc("redcell_memory_used_bytes",
		"Memory the keys take, as maxmemory counts it (INFO used_memory).", nil, nil)
	descArenaGarbage = prometheus.NewDesc("redcell_memory_arena_garbage_bytes",
		"Of redcell_memory_used_bytes, the bytes of the keyspace's arenas no key needs (left by keys moved or gone, or by states that shrank), as of the last measure: given back once the store is at rest, or at once over the limit (INFO redcell_arena_garbage).", nil, nil)
	descMemoryMax = prometheus.NewDesc("redcell_memory_max_bytes",
		"The memory limit (--maxmemory); 0 for none.", nil, nil)
	descEvicted = prometheus.NewDesc("redcell_evicted_keys_total",
		"Keys evicted under the memory limit (volatile-ttl).", nil, nil)
	descReplicas = prometheus.NewDesc("redcell_connected_replicas",
		"Replicas streaming from this master, and of them the good ones min-replicas-to-write counts.", []string{"state"}, nil)
	descMinReplicas = prometheus.NewDesc("redcell_min_replicas_to_write",
		"min-replicas-to-write in force: decisions are refused (NOREPLICAS) with fewer good replicas.", nil, nil)
	descReplicaLag = prometheus.NewDesc("redcell_replica_lag_seconds",
		"Seconds since each replica last acknowledged (INFO slaveN lag).", []string{"replica"}, nil)
	descReplicaBehind = prometheus.NewDesc("redcell_replica_lag_bytes",
		"Bytes of the stream each replica has yet to acknowledge.", []string{"replica"}, nil)
	descLinkUp = prometheus.NewDesc("redcell_master_link_up",
		"On a replica, 1 while its link to the master is up (master_link_status).", nil, nil)
	descTopologyVersion = prometheus.NewDesc("redcell_cluster_topology_version",
		"The version of the topology the operator pushed last (CLUSTERX SETNODES, SETSLOT); -1 before any.", nil, nil)
	descCurrentEpoch = prometheus.NewDesc("redcell_cluster_current_epoch",
		"The highest config epoch of the cluster's shards: Sentinel's failover epoch when Sentinels decide failovers, else the topology's version.", nil, nil)
	descSlotsFail = prometheus.NewDesc("redcell_cluster_slots",
		"Slots by state: ok, pfail (their master down to one Sentinel) and fail (down to a quorum).", []string{"state"}, nil)
	descSentinels = prometheus.NewDesc("redcell_cluster_sentinels",
		"The Sentinels that decide failovers, by whether they answered within the last 3 s: reachable or unreachable.", []string{"state"}, nil)
	descWaiting = prometheus.NewDesc("redcell_cluster_waiting_for_sentinels",
		"1 while this node, restarted with Sentinels, has yet to hear a majority of them and serves no slot as master.", nil, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDecisions, descHits, descMisses, descErrors, descCommands,
		descRejected, descFailed, descLatency, descKeys, descExpired, descPending, descConnected,
		descConnections, descRejectedConns, descPanics, descKeysByKind, descMemory, descArenaGarbage, descMemoryMax, descEvicted, descReplicas,
		descMinReplicas, descReplicaLag, descReplicaBehind, descLinkUp, descTopologyVersion, descCurrentEpoch, descSlotsFail, descSentinels, descWaiting} {
		ch <- d
	}
}

func (col collector) Collect(ch chan<- prometheus.Metric) {
	s := col.s
	c := s.counters()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	for k, name := range deciderNames {
		counter(descDecisions, c.decided[k][0], name, "allowed")
		counter(descDecisions, c.decided[k][1], name, "limited")
	}
	counter(descHits, c.hits)
	counter(descMisses, c.misses)
	for i, k := range errorKinds {
		counter(descErrors, c.errors[i], k.name)
	}
	for _, cs := range s.commandStats() {
		counter(descCommands, cs.latency.count, cs.name)
		counter(descRejected, cs.rejected, cs.name)
		counter(descFailed, cs.failed, cs.name)
		buckets := make(map[float64]uint64, len(latencyBounds))
		var cum int64
		for i, b := range latencyBounds {
			cum += cs.latency.counts[i]
			buckets[b.Seconds()] = uint64(cum)
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, uint64(cs.latency.count),
			cs.latency.sum.Seconds(), buckets, cs.name)
	}
	gauge(descKeys, int64(s.store.Len()))
	counter(descExpired, c.expiredKeys)
	gauge(descPending, int64(s.pendingChanges()))
	gauge(descConnected, c.connectedClients)
	counter(descConnections, c.connections)
	counter(descRejectedConns, c.rejectedConns)
	for where, n := range contain.ByWhere() {
		ch <- prometheus.MustNewConstMetric(descPanics, prometheus.CounterValue, float64(n), where)
	}
	for k, n := range s.store.KeysByKind() {
		ch <- prometheus.MustNewConstMetric(descKeysByKind, prometheus.GaugeValue, float64(n), storage.Kinds[k].Type())
	}
	limit, _ := s.store.MemoryLimit()
	// Measured now: without a limit nothing else measures (the memory
	// watch does not run), and a scrape is off the command path.
	gauge(descMemory, s.store.MeasureMemory())
	gauge(descArenaGarbage, s.store.ArenaGarbage())
	gauge(descMemoryMax, limit)
	counter(descEvicted, s.store.Evicted())
	if s.repl != nil {
		col.collectReplication(ch)
	}
	if s.cluster != nil {
		f := s.clusterFacts()
		gauge(descTopologyVersion, f.version)
		gauge(descCurrentEpoch, f.currentEpoch)
		for state, n := range map[string]int{"ok": f.assigned - f.pfail - f.fail, "pfail": f.pfail, "fail": f.fail} {
			ch <- prometheus.MustNewConstMetric(descSlotsFail, prometheus.GaugeValue, float64(n), state)
		}
		ch <- prometheus.MustNewConstMetric(descSentinels, prometheus.GaugeValue, float64(f.reachable), "reachable")
		ch <- prometheus.MustNewConstMetric(descSentinels, prometheus.GaugeValue, float64(f.sentinels-f.reachable), "unreachable")
		waiting := int64(0)
		if f.held {
			waiting = 1
		}
		gauge(descWaiting, waiting)
	}
}

// pendingChanges counts the changes not yet durable: those the flusher has
// yet to sync, or, without persistence, those recorded (none: an in-memory
// store tracks nothing).
func (s *Server) pendingChanges() int {
	if s.cfg.Persistence != nil {
		return s.cfg.Persistence.Pending()
	}
	return s.store.PendingChanges()
}

// collectReplication reports the replicas of a master, with each one's lag
// by its address (bounded by the replicas, not the keys), or a replica's
// link.
func (col collector) collectReplication(ch chan<- prometheus.Metric) {
	n := col.s.repl
	st := n.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if st.Replica {
		up := 0.0
		if st.LinkUp {
			up = 1
		}
		gauge(descLinkUp, up)
		return
	}
	count, _ := n.MinReplicas()
	gauge(descMinReplicas, float64(count))
	gauge(descReplicas, float64(len(st.Replicas)), "connected")
	gauge(descReplicas, float64(n.GoodReplicas()), "good")
	for _, r := range st.Replicas {
		addr := net.JoinHostPort(r.IP, strconv.Itoa(r.Port))
		gauge(descReplicaLag, r.Lag.Seconds(), addr)
		gauge(descReplicaBehind, float64(max(0, st.Offset-r.Offset)), addr)
	}
}
