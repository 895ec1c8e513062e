package daemon

import (
	"log/slog"
	"net"

	"github.com/redcell/redcell/cluster"
	"github.com/redcell/redcell/config"
)

// startCluster returns the node's cluster state, persisted in --dir
// (nodes.conf) unless --in-memory.
func startCluster(cfg config.Config, port int, logger *slog.Logger) (*cluster.State, error) {
	dir := cfg.Dir
	if cfg.InMemory {
		dir = ""
	}
	ip := cfg.ClusterAnnounceIP
	if ip == "" {
		ip = cfg.Bind
		if a := net.ParseIP(ip); a == nil || a.IsUnspecified() {
			ip = "127.0.0.1"
		}
	}
	st, err := cluster.NewState(dir, cfg.ClusterEnabled == "emulated", ip, port)
	if err != nil {
		return nil, err
	}
	top, me := st.Topology()
	version := int64(-1)
	if top != nil {
		version = top.Version
	}
	logger.Info("cluster mode", "mode", cfg.ClusterEnabled, "myid", st.MyID(), "topology_version", version, "in_topology", me != nil)
	return st, nil
}
