package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/redcell/redcell/clusteradmin"
	"github.com/redcell/redcell/config"
)

// clusterCompose is the part of deploy/compose-cluster.yml the test reads.
type clusterCompose struct {
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
	Services map[string]struct {
		composeService `yaml:",inline"`
		Networks       map[string]*struct {
			IPv4 string `yaml:"ipv4_address"`
		} `yaml:"networks"`
		Restart     string         `yaml:"restart"`
		Healthcheck map[string]any `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// deploy/compose-cluster.yml: six redcell nodes in cluster mode from this
// Dockerfile, each on a volume of its own at a fixed address; three
// Sentinels from deploy/sentinel-cluster.conf, which monitors nothing; and
// a one-shot `redcell cluster create` of the six with one replica each and
// the three Sentinels, whose layout has each replica on another address
// than its master. The Sentinel's start command is run here with a real
// redis-server: it copies the configuration once, and a Sentinel restarted
// keeps what it was told.
func TestClusterCompose(t *testing.T) {
	text, err := os.ReadFile("deploy/compose-cluster.yml")
	require.NoError(t, err)
	var compose clusterCompose
	require.NoError(t, yaml.Unmarshal(text, &compose))
	img := readDockerfile(t)
	require.Len(t, compose.Networks["cluster"].IPAM.Config, 1)
	_, subnet, err := net.ParseCIDR(compose.Networks["cluster"].IPAM.Config[0].Subnet)
	require.NoError(t, err)
	address := func(name string) string {
		svc, ok := compose.Services[name]
		require.True(t, ok, name)
		n := svc.Networks["cluster"]
		require.NotNil(t, n, "%s is on the cluster network", name)
		ip := net.ParseIP(n.IPv4)
		require.True(t, subnet.Contains(ip), "%s's address %s is in %s", name, n.IPv4, subnet)
		return ip.String()
	}

	var nodes []string
	volumes := map[string]bool{}
	for i := 1; i <= 6; i++ {
		name := "redcell-" + strconv.Itoa(i)
		svc := compose.Services[name]
		require.Equal(t, "redcell:latest", svc.Image, name)
		env := map[string]string{}
		for k, v := range img.env {
			env[k] = v
		}
		for k, v := range svc.Environment {
			env[k] = v
		}
		args := append(append([]string{}, img.cmd...), svc.Command...)
		cfg, err := config.Parse(args, envLookup(env), io.Discard)
		require.NoError(t, err, "%s: %q", name, args)
		require.Equal(t, "yes", cfg.ClusterEnabled, name)
		require.Equal(t, "0.0.0.0", cfg.Bind, name)
		require.Len(t, svc.Volumes, 1, name)
		vol, dir, _ := strings.Cut(svc.Volumes[0], ":")
		require.Equal(t, cfg.Dir, dir, "%s keeps its topology and Sentinels (nodes.conf) on a volume", name)
		require.False(t, volumes[vol], "%s has a volume of its own", name)
		volumes[vol] = true
		require.Contains(t, compose.Volumes, vol)
		nodes = append(nodes, net.JoinHostPort(address(name), strconv.Itoa(cfg.Port)))
	}
	require.NotNil(t, compose.Services["redcell-1"].Build, "the first node's service builds the image")

	conf, err := os.ReadFile("deploy/sentinel-cluster.conf")
	require.NoError(t, err)
	require.NotContains(t, string(conf), "sentinel monitor", "cluster create registers the shards")
	require.Contains(t, string(conf), "\nsentinel resolve-hostnames no\n")
	var sentinelPort string
	for _, line := range strings.Split(string(conf), "\n") {
		if p, ok := strings.CutPrefix(line, "port "); ok {
			sentinelPort = p
		}
	}
	require.NotEmpty(t, sentinelPort)
	var sentinels []string
	for i := 1; i <= 3; i++ {
		name := "sentinel-" + strconv.Itoa(i)
		svc := compose.Services[name]
		require.Contains(t, svc.Volumes, "./sentinel-cluster.conf:/etc/redcell/sentinel-cluster.conf:ro", name)
		require.Contains(t, svc.Volumes, name+"-data:/data", name)
		require.Equal(t, "sh", svc.Command[0], name)
		require.NotNil(t, svc.Healthcheck, "%s: cluster-create waits for it to answer", name)
		sentinels = append(sentinels, net.JoinHostPort(address(name), sentinelPort))
	}

	create := compose.Services["cluster-create"]
	require.Equal(t, "redcell:latest", create.Image)
	require.Equal(t, "no", create.Restart, "a one-shot step")
	require.Equal(t, []string{"/usr/local/bin/redcell"}, img.entrypoint)
	require.Equal(t, []string{"cluster", "create"}, create.Command[:2])
	o, err := clusteradmin.ParseCreate(create.Command[2:])
	require.NoError(t, err)
	require.Equal(t, nodes, o.Nodes, "the six nodes, in order")
	require.Equal(t, 1, o.Replicas)
	require.Equal(t, sentinels, o.Sentinels)
	require.Equal(t, "redcell", o.SentinelPrefix)
	deps, ok := create.DependsOn.(map[string]any)
	require.True(t, ok, "depends_on with conditions")
	for _, name := range []string{"redcell-1", "redcell-2", "redcell-3", "redcell-4", "redcell-5", "redcell-6", "sentinel-1", "sentinel-2", "sentinel-3"} {
		require.Equal(t, map[string]any{"condition": "service_healthy"}, deps[name], "cluster-create waits for %s", name)
	}

	var members []clusteradmin.Member
	for _, n := range o.Nodes {
		host, port, _ := net.SplitHostPort(n)
		p, _ := strconv.Atoi(port)
		members = append(members, clusteradmin.Member{ID: n, Host: host, Port: p})
	}
	shards, err := clusteradmin.Layout(members, o.Replicas)
	require.NoError(t, err)
	require.Len(t, shards, 3, "three shards of two")
	for i, s := range shards {
		require.Equal(t, nodes[i], s.Master.Addr(), "redcell-%d is a master", i+1)
		require.Len(t, s.Replicas, 1)
		require.NotEqual(t, s.Master.Host, s.Replicas[0].Host)
	}

	t.Run("the Sentinel's start", func(t *testing.T) {
		sentinelStart(t, compose.Services["sentinel-1"].Command)
	})
}

// sentinelStart runs a Sentinel service's start command (sh -c ...) here,
// /data and /etc/redcell in directories of the test, on a free port: it
// copies the configuration and starts a Sentinel that monitors nothing;
// told to monitor a master and started again, it still does (the copy was
// kept). Without redis-server the test is skipped, and fails under CI.
func sentinelStart(t *testing.T, command []string) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found in PATH: install it with `apt-get install redis-server` (Debian/Ubuntu) or `brew install redis`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set, so this is a failure)")
		}
		t.Skip(msg)
	}
	require.Equal(t, []string{"sh", "-c"}, command[:2])
	data, etc := t.TempDir(), t.TempDir()
	conf, err := os.ReadFile("deploy/sentinel-cluster.conf")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(etc, "sentinel-cluster.conf"), conf, 0o644))
	port := freeLoopbackPort(t)
	script := strings.NewReplacer("/data", data, "/etc/redcell", etc, "exec redis-server", "exec "+path).Replace(command[2]) +
		" --port " + strconv.Itoa(port) + " --bind 127.0.0.1"
	addr := "127.0.0.1:" + strconv.Itoa(port)
	start := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", script)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		require.Eventually(t, func() bool { return sentinelAnswer(addr, "PING") == "+PONG" }, 10*time.Second, 20*time.Millisecond)
		return cmd
	}
	cmd := start()
	require.Equal(t, "*0", sentinelAnswer(addr, "SENTINEL", "MASTERS"), "it monitors nothing to begin with")
	require.Equal(t, "+OK", sentinelAnswer(addr, "SENTINEL", "MONITOR", "redcell-1", "127.0.0.1", "7001", "2"))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	start()
	require.Equal(t, "*1", sentinelAnswer(addr, "SENTINEL", "MASTERS"), "restarted, it still monitors redcell-1")
	written, err := os.ReadFile(filepath.Join(data, "sentinel.conf"))
	require.NoError(t, err)
	require.Contains(t, string(written), "sentinel monitor redcell-1 127.0.0.1 7001 2")
}

// sentinelAnswer sends one command to addr and returns the first line of
// its reply, "" when it does not answer.
func sentinelAnswer(addr string, args ...string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return ""
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimRight(line, "\r\n")
}
