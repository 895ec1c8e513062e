package main

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/internal/testkit"
)

// Docker cannot run on the machines these tests run on, so the Dockerfile
// and docker-compose.yml are checked by reading them: their instructions
// are parsed, the settings they give are run through config.Parse as the
// container's redcell would, and the Dockerfile's build command is run
// here to show that it makes a static binary that serves and answers the
// health check with the image's settings.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	from, name string
	inst       []instruction
}

// parseDockerfile splits a Dockerfile into stages of instructions: comment
// lines and parser directives are dropped, lines ending in a backslash are
// joined to the next.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	var pending string
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		full := pending + line
		pending = ""
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		args = strings.TrimSpace(args)
		if cmd == "FROM" {
			f := strings.Fields(args)
			st := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		require.NotEmpty(t, stages, "%s before any FROM", cmd)
		stages[len(stages)-1].inst = append(stages[len(stages)-1].inst, instruction{cmd, args})
	}
	require.Empty(t, pending, "the Dockerfile ends inside a continued line")
	return stages
}

func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.inst {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func (s stage) last(t *testing.T, cmd string) string {
	t.Helper()
	all := s.all(cmd)
	require.NotEmpty(t, all, "the stage has no %s", cmd)
	return all[len(all)-1]
}

// execForm parses a JSON exec-form argument list: ["a", "b"].
func execForm(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	require.NoError(t, json.Unmarshal([]byte(s), &out), "exec form (a JSON array), not shell form: %s", s)
	return out
}

// shellWords splits a POSIX shell word list with single and double quotes
// and ${VAR} from vars, enough for the Dockerfile's build line.
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'' && ch != '\'':
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			inWord = true
			if quote == ch {
				quote = 0
			} else if quote == 0 {
				quote = ch
			} else {
				cur.WriteByte(ch)
			}
		case ch == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			require.Positive(t, end, "unclosed ${ in %q", s)
			name := s[i+2 : i+end]
			v, ok := vars[name]
			require.True(t, ok, "${%s} is not an ARG or ENV with a default", name)
			cur.WriteString(v)
			inWord = true
			i += end
		case quote == 0 && (ch == ' ' || ch == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	require.Zero(t, quote, "unbalanced quotes in %q", s)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// envPairs parses ENV's key=value form, several to a line.
func envPairs(t *testing.T, args string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range shellWords(t, args, nil) {
		k, v, ok := strings.Cut(w, "=")
		require.True(t, ok, "ENV %q: use the key=value form", w)
		out[k] = v
	}
	return out
}

// dockerImage is what the Dockerfile's final stage says about the image.
type dockerImage struct {
	build      stage
	final      stage
	env        map[string]string
	entrypoint []string
	cmd        []string
	user       string
	volumes    []string
	exposed    []int
	health     []string // the HEALTHCHECK's command
	buildVars  map[string]string
}

func readDockerfile(t *testing.T) dockerImage {
	t.Helper()
	text, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	stages := parseDockerfile(t, string(text))
	require.GreaterOrEqual(t, len(stages), 2, "a multi-stage build")
	img := dockerImage{final: stages[len(stages)-1], env: map[string]string{}, buildVars: map[string]string{}}
	for _, st := range stages[:len(stages)-1] {
		for _, run := range st.all("RUN") {
			if strings.Contains(run, "go build") {
				img.build = st
			}
		}
	}
	require.NotEmpty(t, img.build.from, "a stage runs go build")
	for _, arg := range img.build.all("ARG") {
		k, v, _ := strings.Cut(arg, "=")
		img.buildVars[k] = v
	}
	for _, e := range img.final.all("ENV") {
		for k, v := range envPairs(t, e) {
			img.env[k] = v
		}
	}
	img.entrypoint = execForm(t, img.final.last(t, "ENTRYPOINT"))
	if cmds := img.final.all("CMD"); len(cmds) > 0 {
		img.cmd = execForm(t, cmds[len(cmds)-1])
	}
	img.user = img.final.last(t, "USER")
	for _, v := range img.final.all("VOLUME") {
		if strings.HasPrefix(v, "[") {
			img.volumes = append(img.volumes, execForm(t, v)...)
		} else {
			img.volumes = append(img.volumes, strings.Fields(v)...)
		}
	}
	for _, e := range img.final.all("EXPOSE") {
		for _, p := range strings.Fields(e) {
			n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
			require.NoError(t, err, "EXPOSE %s", p)
			img.exposed = append(img.exposed, n)
		}
	}
	hc := img.final.last(t, "HEALTHCHECK")
	_, after, ok := strings.Cut(hc, " CMD ")
	require.True(t, ok, "HEALTHCHECK [options] CMD [...]: %s", hc)
	img.health = execForm(t, strings.TrimSpace(after))
	return img
}

// The Dockerfile: multi-stage, a static CGO_ENABLED=0 build copied into a
// static-only base, a non-root user, a volume at the data directory the
// settings name, the ports they name exposed, and a health check that
// pings the server with the server's own settings.
func TestDockerfile(t *testing.T) {
	img := readDockerfile(t)
	require.True(t, strings.HasPrefix(img.build.from, "golang:1.26"), "the build stage uses this module's Go: %s", img.build.from)
	require.NotEmpty(t, img.build.name, "the build stage is named for COPY --from")
	require.True(t, img.final.from == "scratch" || strings.HasPrefix(img.final.from, "gcr.io/distroless/static"),
		"the final image has no libc, so only a static binary runs in it: %s", img.final.from)
	require.Contains(t, strings.Join(img.final.all("COPY"), "\n"), "--from="+img.build.name+" /out/redcell "+img.entrypoint[0])

	uid, _, _ := strings.Cut(img.user, ":")
	require.NotContains(t, []string{"", "0", "root"}, uid, "runs as a non-root user")

	cfg, err := config.Parse(img.cmd, envLookup(img.env), io.Discard)
	require.NoError(t, err, "the image's settings are valid")
	require.Equal(t, "0.0.0.0", cfg.Bind, "reachable from outside the container")
	require.False(t, cfg.ProtectedMode, "as Redis's official image: the container's network decides")
	require.Equal(t, 6379, cfg.Port)
	require.Equal(t, "/data", cfg.Dir)
	require.False(t, cfg.InMemory)
	require.Equal(t, ":9379", cfg.MetricsAddr)
	require.Equal(t, "json", cfg.LogFormat)
	require.Contains(t, img.volumes, cfg.Dir, "the data directory is a volume")
	require.Contains(t, img.exposed, cfg.Port)
	require.Contains(t, img.exposed, 9379, "the metrics port")

	require.Equal(t, []string{img.entrypoint[0], "--healthcheck"}, img.health,
		"the health check is redcell's own PING, with the image's REDCELL_* settings")
	hcCfg, err := config.Parse(img.health[1:], envLookup(img.env), io.Discard)
	require.NoError(t, err)
	require.True(t, hcCfg.HealthCheck)
	require.Equal(t, cfg.Port, hcCfg.Port, "it pings the port the server listens on")
	require.Equal(t, "SIGTERM", img.final.last(t, "STOPSIGNAL"), "the signal that saves before exiting")
}

// The Dockerfile's build command, run here: it builds a static binary
// (no ELF interpreter, no shared libraries) that serves with the image's
// settings and passes the image's health check.
func TestDockerfileBuildsAStaticBinaryThatPassesItsHealthCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	img := readDockerfile(t)
	var build []string
	for _, run := range img.build.all("RUN") {
		for _, part := range strings.Split(run, "&&") {
			if strings.Contains(part, "go build") {
				build = shellWords(t, strings.TrimSpace(part), img.buildVars)
			}
		}
	}
	require.NotEmpty(t, build)
	var env []string
	for len(build) > 0 && strings.Contains(build[0], "=") {
		env = append(env, build[0])
		build = build[1:]
	}
	require.Contains(t, env, "CGO_ENABLED=0")
	require.Equal(t, []string{"go", "build"}, build[:2])
	out := filepath.Join(t.TempDir(), "redcell")
	for i, w := range build {
		if w == "-o" {
			require.Equal(t, "/out/redcell", build[i+1])
			build[i+1] = out
		}
	}
	// go test puts its own GOROOT/bin first in the test's PATH.
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command on PATH")
	cmd := exec.Command(goTool, build[1:]...)
	cmd.Env = append(os.Environ(), env...)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "%v:\n%s", build, output)

	f, err := elf.Open(out)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary needs no dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs)

	version, err := exec.Command(out, "--version").Output()
	require.NoError(t, err)
	require.Contains(t, string(version), "(commit unknown, ", "COMMIT's default reaches -X main.commit")

	// The image's settings, but on the loopback and a free port, as this
	// machine allows.
	port := freeLoopbackPort(t)
	over := map[string]string{"REDCELL_BIND": "127.0.0.1", "REDCELL_PORT": strconv.Itoa(port),
		"REDCELL_DIR": t.TempDir(), "REDCELL_METRICS_ADDR": "127.0.0.1:0"}
	var settings []string // with the caller's REDCELL_ variables left out (Program.Command)
	for k, v := range img.env {
		if o, ok := over[k]; ok {
			v = o
		}
		settings = append(settings, k+"="+v)
	}
	prog := testkit.ProgramAt(out)
	health := func() error {
		b, err := prog.Command(settings, img.health[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, b)
		}
		return nil
	}
	require.Error(t, health(), "nothing listens yet: unhealthy")

	srv := testkit.Start(t, prog, settings, img.cmd...)
	require.Equal(t, port, srv.Port, "the image's settings, REDCELL_PORT")
	require.Eventually(t, func() bool { return health() == nil }, 30*time.Second, 20*time.Millisecond, "healthy once serving")
	require.NoError(t, srv.Stop(os.Interrupt), "a clean stop")
	require.Contains(t, srv.Log(), `"msg":"saved state"`, "JSON logs, and the final save: %s", srv.Log())
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func envLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// composeFile is the part of docker-compose.yml the test reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Build           any               `yaml:"build"`
	Image           string            `yaml:"image"`
	Command         []string          `yaml:"command"`
	Environment     map[string]string `yaml:"environment"`
	Ports           []string          `yaml:"ports"`
	Volumes         []string          `yaml:"volumes"`
	DependsOn       any               `yaml:"depends_on"`
	StopGracePeriod string            `yaml:"stop_grace_period"`
}

// docker-compose.yml: redcell built from this Dockerfile, its flags and
// variables valid for the real config.Parse and meaning what the file says,
// its data on a named volume, published on the loopback; Prometheus
// scraping its metrics port; redis_exporter pointed at its RESP port.
func TestDockerCompose(t *testing.T) {
	text, err := os.ReadFile("docker-compose.yml")
	require.NoError(t, err)
	var compose composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(text)))
	require.NoError(t, dec.Decode(&compose))

	rc, ok := compose.Services["redcell"]
	require.True(t, ok, "a redcell service")
	build, ok := rc.Build.(map[string]any)
	require.True(t, ok, "redcell is built here")
	require.Equal(t, ".", build["context"])

	img := readDockerfile(t)
	env := map[string]string{}
	for k, v := range img.env {
		env[k] = v
	}
	for k, v := range rc.Environment {
		env[k] = v
	}
	args := append(append([]string{}, img.cmd...), rc.Command...)
	cfg, err := config.Parse(args, envLookup(env), io.Discard)
	require.NoError(t, err, "the service's command %q and environment", args)
	require.Equal(t, "0.0.0.0", cfg.Bind)
	require.Equal(t, 6379, cfg.Port)
	require.Equal(t, "/data", cfg.Dir)
	require.Equal(t, time.Second, cfg.FlushInterval)
	require.Equal(t, 64, cfg.Shards)
	require.Equal(t, ":9379", cfg.MetricsAddr)
	require.Equal(t, "json", cfg.LogFormat)
	require.Equal(t, slog.LevelInfo, cfg.LogLevel)

	require.Contains(t, rc.Volumes, "redcell-data:"+cfg.Dir, "the data directory on a named volume")
	require.Contains(t, compose.Volumes, "redcell-data")
	require.Contains(t, rc.Ports, "127.0.0.1:6379:"+strconv.Itoa(cfg.Port), "published on the loopback only")
	grace, err := time.ParseDuration(rc.StopGracePeriod)
	require.NoError(t, err)
	require.GreaterOrEqual(t, grace, 10*time.Second, "time for the final save")

	prom, ok := compose.Services["prometheus"]
	require.True(t, ok, "a prometheus service")
	var promConfig string
	for _, v := range prom.Volumes {
		host, inContainer, _ := strings.Cut(strings.TrimSuffix(v, ":ro"), ":")
		if inContainer == "/etc/prometheus/prometheus.yml" {
			promConfig = host
		}
	}
	require.Equal(t, "./deploy/prometheus.yml", promConfig)
	require.Contains(t, prom.Command, "--config.file=/etc/prometheus/prometheus.yml")
	require.Contains(t, prom.Volumes, "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro", "the alert rules (deploy/deploy_test.go tests them)")
	grafana, ok := compose.Services["grafana"]
	require.True(t, ok, "a grafana service that shows the dashboard")
	require.Contains(t, grafana.Volumes, "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro")
	require.Contains(t, grafana.Volumes, "./deploy/grafana/redcell.json:/var/lib/grafana/dashboards/redcell.json:ro")

	var scrape struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	promText, err := os.ReadFile(promConfig)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(promText, &scrape))
	require.Equal(t, []string{"/etc/prometheus/alerts.yml"}, scrape.RuleFiles)
	_, metricsPort, err := net.SplitHostPort(cfg.MetricsAddr)
	require.NoError(t, err)
	targets := map[string]string{}
	for _, sc := range scrape.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				targets[target] = sc.JobName
			}
		}
		if sc.JobName == "redcell" {
			require.Contains(t, []string{"", "/metrics"}, sc.MetricsPath)
		}
	}
	require.Equal(t, "redcell", targets["redcell:"+metricsPort], "Prometheus scrapes redcell's metrics port: %v", targets)

	exporter, ok := compose.Services["redis-exporter"]
	require.True(t, ok)
	require.Equal(t, "redis://redcell:"+strconv.Itoa(cfg.Port), exporter.Environment["REDIS_ADDR"])
	require.Equal(t, "redis_exporter", targets["redis-exporter:9121"])
}

// deploy/compose-sentinel.yml: three redcell nodes from this Dockerfile,
// two of them replicas of the first, each on its own volume; three
// Sentinels monitoring the first with a quorum of two, from a copy of
// deploy/sentinel.conf.
func TestSentinelCompose(t *testing.T) {
	text, err := os.ReadFile("deploy/compose-sentinel.yml")
	require.NoError(t, err)
	var compose composeFile
	require.NoError(t, yaml.Unmarshal(text, &compose))
	img := readDockerfile(t)

	volumes := map[string]bool{}
	for i, wantReplicaOf := range []string{"", "redcell-1 6379", "redcell-1 6379"} {
		name := "redcell-" + strconv.Itoa(i+1)
		svc, ok := compose.Services[name]
		require.True(t, ok, name)
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
		require.Equal(t, wantReplicaOf, cfg.ReplicaOf, name)
		require.Equal(t, 6379, cfg.Port, name)
		require.Len(t, svc.Volumes, 1, name)
		vol, dir, _ := strings.Cut(svc.Volumes[0], ":")
		require.Equal(t, cfg.Dir, dir, "%s keeps its state (and its role, replication.conf) on a volume", name)
		require.False(t, volumes[vol], "%s has a volume of its own", name)
		volumes[vol] = true
		require.Contains(t, compose.Volumes, vol)
	}
	require.NotNil(t, compose.Services["redcell-1"].Build, "the master's service builds the image")

	conf, err := os.ReadFile("deploy/sentinel.conf")
	require.NoError(t, err)
	require.Contains(t, string(conf), "\nsentinel monitor mymaster redcell-1 6379 2\n")
	for i := 1; i <= 3; i++ {
		name := "sentinel-" + strconv.Itoa(i)
		svc, ok := compose.Services[name]
		require.True(t, ok, name)
		require.Contains(t, svc.Volumes, "./sentinel.conf:/etc/redcell/sentinel.conf:ro", name)
		require.Contains(t, strings.Join(svc.Command, " "), "cp /etc/redcell/sentinel.conf /data/sentinel.conf", "%s rewrites a copy", name)
		require.Contains(t, strings.Join(svc.Command, " "), "--sentinel", name)
	}
}
