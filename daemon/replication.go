package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/atomicfile"
	"github.com/redcell/redcell/replication"
	"github.com/redcell/redcell/server"
	"github.com/redcell/redcell/storage"
)

// The replication role across restarts: CONFIG REWRITE, which Sentinel sends
// after every REPLICAOF it makes, writes the role to roleFile in --dir, and
// the next start takes it over --replicaof, so that a node comes back as
// what Sentinel made it (Redis gets the same from rewriting its config
// file).

// roleFile is the file in --dir that CONFIG REWRITE writes.
const roleFile = "replication.conf"

// savedRole is what roleFile holds.
type savedRole struct {
	host     string // "": a master
	port     int
	priority int
}

// startReplication returns the node's replication, a replica of the saved
// role's master or of --replicaof's, or a master.
func startReplication(cfg config.Config, store *storage.Store, port int, logger *slog.Logger) (*replication.Node, error) {
	node := replication.New(replication.Config{Store: store, BacklogSize: int(cfg.ReplBacklogSize),
		BufferLimit: int(cfg.ReplBufferLimit),
		MasterUser:  cfg.MasterUser, MasterAuth: cfg.MasterPass, ListeningPort: port, Logger: logger,
		MinReplicas: cfg.MinReplicasToWrite, MinReplicasMaxLag: minReplicasMaxLag(cfg.MinReplicasMaxLag)})
	node.SetPriority(int64(cfg.ReplicaPriority))
	store.SetUncounted(node.BufferMemory)
	host, mport, replica := cfg.ReplicaOfAddr()
	if !cfg.InMemory {
		saved, found, err := readRole(filepath.Join(cfg.Dir, roleFile))
		if err != nil {
			node.Close()
			return nil, err
		}
		if found {
			host, mport, replica = saved.host, saved.port, saved.host != ""
			node.SetPriority(int64(saved.priority))
			logger.Info("replication role from CONFIG REWRITE", "file", filepath.Join(cfg.Dir, roleFile), "replicaof", cfg.ReplicaOf)
		}
	}
	if replica {
		if _, err := node.ReplicaOf(host, mport); err != nil {
			node.Close()
			return nil, err
		}
		logger.Info("replica of", "master", host+":"+strconv.Itoa(mport))
	}
	return node, nil
}

// rewriteRole is CONFIG REWRITE: the node's role and replica-priority,
// written to a temporary file, synced and renamed over roleFile, so that a
// crash leaves the old file or the new one whole.
func rewriteRole(cfg config.Config, node *replication.Node) error {
	if cfg.InMemory {
		return server.ErrNoConfigFile
	}
	st := node.Status()
	line := "replicaof no one"
	if st.Replica {
		line = "replicaof " + st.MasterHost + " " + strconv.Itoa(st.MasterPort)
	}
	body := "# Written by CONFIG REWRITE: redcell starts with this role, over --replicaof.\n" +
		line + "\nreplica-priority " + strconv.FormatInt(st.Priority, 10) + "\n"
	if err := atomicfile.Write(filepath.Join(cfg.Dir, roleFile), []byte(body)); err != nil {
		return fmt.Errorf("CONFIG REWRITE: %w", err)
	}
	return nil
}

// readRole reads roleFile; found is false when there is none.
func readRole(path string) (role savedRole, found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return role, false, nil
	}
	if err != nil {
		return role, false, err
	}
	defer f.Close()
	role.priority = replication.DefaultReplicaPriority
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		bad := func() (savedRole, bool, error) {
			return savedRole{}, false, fmt.Errorf("%s:%d: %q is not a setting redcell writes", path, n, sc.Text())
		}
		switch {
		case fields[0] == "replicaof" && len(fields) == 3 && fields[1] == "no" && fields[2] == "one":
			role.host, role.port = "", 0
		case fields[0] == "replicaof" && len(fields) == 3:
			p, err := strconv.Atoi(fields[2])
			if err != nil || p < 1 || p > 65535 {
				return bad()
			}
			role.host, role.port = fields[1], p
		case fields[0] == "replica-priority" && len(fields) == 2:
			p, err := strconv.Atoi(fields[1])
			if err != nil || p < 0 {
				return bad()
			}
			role.priority = p
		default:
			return bad()
		}
	}
	return role, true, sc.Err()
}

// minReplicasMaxLag is replication.Config.MinReplicasMaxLag for
// --min-replicas-max-lag: its 0, which turns the check off, is a negative
// lag there (whose 0 is the default).
func minReplicasMaxLag(lag time.Duration) time.Duration {
	if lag == 0 {
		return -1
	}
	return lag
}
