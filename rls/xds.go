package rls

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// XDS keeps a Service's rules those of an xDS management server: it
// subscribes, as envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW does, over
// ADS state of the world to every RateLimitConfig resource (no names asked),
// and puts each response's resources in force together (xdsFiles, Load),
// whatever its version: a restarted management server counts from 1 again.
// A response the loader accepts is ACKed; one it refuses is NACKed with the
// refusal (the resource's name and the reason) as error_detail, and the
// rules in force stay. Loads are logged and counted as a file reload's
// (reportLoad).
//
// The management server re-sends a NACKed response as soon as it reads the
// NACK, over a thousand times a second: the same refused resources are not
// loaded again, and their NACK waits a little longer each time, up to
// NackDelay, so that a fixed snapshot still lands within NackDelay and the
// storm costs next to nothing; it is logged once, then at most every
// LogEvery. A lost stream is opened again after MinBackoff, doubling up to
// MaxBackoff while it keeps failing; the rules in force serve meanwhile.
type XDS struct {
	// Server is the management server's host:port (a gRPC target).
	Server string
	// Node identifies this server to the management server, which keys its
	// snapshots by the node's id (the reference's CONFIG_GRPC_XDS_NODE_ID
	// and CONFIG_GRPC_XDS_NODE_METADATA).
	Node *core.Node
	// Headers are metadata sent on the stream (the reference's
	// CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS).
	Headers map[string]string
	// TLS, when not nil, secures the connection (XDSTLSConfig).
	TLS *tls.Config

	Options LoadOptions
	Service *Service
	Logger  *slog.Logger
	Metrics *Metrics

	// MinBackoff and MaxBackoff bound the wait before a lost stream is
	// opened again. The defaults are 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// NackDelay bounds the wait before the same refused resources are
	// NACKed again. The default is 500ms.
	NackDelay time.Duration
	// LogEvery bounds how often a failure that repeats is logged. The
	// default is 30s.
	LogEvery time.Duration

	accepted string // the version of the rules in force, "" before any
	refused  struct {
		sum      [sha256.Size]byte // of the resources last refused
		err      error
		repeats  int // NACKs of them since
		loggedAt time.Time
		logged   int // repeats when last logged
	}
}

// Defaults of XDS's zero fields.
const (
	DefaultXDSMinBackoff = 100 * time.Millisecond
	DefaultXDSMaxBackoff = 5 * time.Second
	DefaultXDSNackDelay  = 500 * time.Millisecond
	DefaultXDSLogEvery   = 30 * time.Second
)

// XDSTLSConfig is the TLS of the connection to the management server, as
// the reference's CONFIG_GRPC_XDS_SERVER_USE_TLS settings make it: the
// system's roots and the CA certificates in caFile (if given), the client
// certificate in certFile and keyFile (if given, for mutual TLS), and the
// name the server's certificate must hold (empty: the host of the server's
// address).
func XDSTLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// XDSNode is the node this server presents: id, and metadata as string
// values.
func XDSNode(id string, md map[string]string) *core.Node {
	n := &core.Node{Id: id, UserAgentName: "redcell"}
	if len(md) > 0 {
		n.Metadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for k, v := range md {
			n.Metadata.Fields[k] = structpb.NewStringValue(v)
		}
	}
	return n
}

// Run follows the management server until ctx is done.
func (x *XDS) Run(ctx context.Context) {
	minB, maxB := cmp.Or(x.MinBackoff, DefaultXDSMinBackoff), cmp.Or(x.MaxBackoff, DefaultXDSMaxBackoff)
	creds := insecure.NewCredentials()
	if x.TLS != nil {
		creds = credentials.NewTLS(x.TLS)
	}
	// gRPC's own reconnection waits as long as the streams do, not its
	// default of up to two minutes.
	conn, err := grpc.NewClient(x.Server, grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: minB, Multiplier: 2, Jitter: 0.2, MaxDelay: maxB},
			MinConnectTimeout: 5 * time.Second}))
	if err != nil {
		x.log(slog.LevelError, "the xDS management server's address is refused, no rules will come", "xds_server", x.Server, "err", err)
		return
	}
	defer conn.Close()
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	wait := minB
	var failures int
	var loggedAt time.Time
	for {
		got, err := x.follow(ctx, client)
		if ctx.Err() != nil {
			return
		}
		if got {
			wait, failures = minB, 0
			x.log(slog.LevelWarn, "lost the xDS management server, the rules in force serve meanwhile", "xds_server", x.Server, "err", err)
		} else {
			failures++
			if failures == 1 || time.Since(loggedAt) >= cmp.Or(x.LogEvery, DefaultXDSLogEvery) {
				loggedAt = time.Now()
				x.log(slog.LevelWarn, "cannot reach the xDS management server, retrying", "xds_server", x.Server,
					"attempts", failures, "err", err, "rules", x.accepted != "")
			}
		}
		if !sleepCtx(ctx, wait/2+rand.N(wait/2+1)) { // jittered, so that a fleet does not reconnect at once
			return
		}
		wait = min(2*wait, maxB)
	}
}

// follow runs one stream: it subscribes, then loads each response and
// answers it until the stream fails. got reports whether a response came.
func (x *XDS) follow(ctx context.Context, client discovery.AggregatedDiscoveryServiceClient) (got bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for k, v := range x.Headers {
		ctx = metadata.AppendToOutgoingContext(ctx, k, v)
	}
	stream, err := client.StreamAggregatedResources(ctx)
	if err != nil {
		return false, err
	}
	// No version: whatever the server holds now is sent, even if it
	// counts versions as the one before its restart did.
	if err := stream.Send(&discovery.DiscoveryRequest{Node: x.Node, TypeUrl: RateLimitConfigType}); err != nil {
		return false, err
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return got, err
		}
		if !got {
			x.log(slog.LevelInfo, "following the xDS management server", "xds_server", x.Server, "node", x.Node.GetId())
		}
		got = true
		if resp.GetTypeUrl() != RateLimitConfigType {
			continue // not asked for; nothing to answer
		}
		ack := &discovery.DiscoveryRequest{Node: x.Node, TypeUrl: RateLimitConfigType, ResponseNonce: resp.GetNonce()}
		if lerr := x.apply(resp); lerr != nil {
			if !sleepCtx(ctx, x.nackDelay()) {
				return got, ctx.Err()
			}
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: lerr.Error()}
		}
		ack.VersionInfo = x.accepted
		if err := stream.Send(ack); err != nil {
			return got, err
		}
	}
}

// apply loads a response's resources and puts them in force, or returns
// why they are refused.
func (x *XDS) apply(resp *discovery.DiscoveryResponse) error {
	sum := resourcesDigest(resp.GetResources())
	if x.refused.err != nil && sum == x.refused.sum {
		x.refused.repeats++
		if time.Since(x.refused.loggedAt) >= cmp.Or(x.LogEvery, DefaultXDSLogEvery) {
			x.log(slog.LevelError, "the xDS management server keeps sending the refused configuration", "xds_server", x.Server,
				"version", resp.GetVersionInfo(), "nacks", x.refused.repeats-x.refused.logged, "err", x.refused.err)
			x.refused.loggedAt, x.refused.logged = time.Now(), x.refused.repeats
		}
		return x.refused.err
	}
	files, err := xdsFiles(resp.GetResources())
	var rules *Rules
	if err == nil {
		rules, err = Load(files, x.Options)
	}
	if err == nil {
		x.Service.SetRules(rules)
		x.accepted = resp.GetVersionInfo()
		x.refused.err = nil
	} else {
		x.refused.sum, x.refused.err, x.refused.repeats = sum, err, 0
		x.refused.loggedAt, x.refused.logged = time.Now(), 0
	}
	reportLoad(x.Logger, x.Metrics, len(files), rules, err, "xds_server", x.Server, "version", resp.GetVersionInfo(),
		"resources", len(resp.GetResources()))
	return err
}

// nackDelay is how long the NACK of the refused resources waits: none the
// first time, then 50ms doubling up to NackDelay.
func (x *XDS) nackDelay() time.Duration {
	if x.refused.repeats == 0 {
		return 0
	}
	most := cmp.Or(x.NackDelay, DefaultXDSNackDelay)
	d := 50 * time.Millisecond << min(x.refused.repeats-1, 10)
	return min(d, most)
}

func (x *XDS) log(level slog.Level, msg string, args ...any) {
	if x.Logger != nil {
		x.Logger.Log(context.Background(), level, msg, args...)
	}
}

// resourcesDigest identifies a response's resources, in any order: a
// snapshot cache sends the resources of one snapshot in a different order
// each time.
func resourcesDigest(resources []*anypb.Any) [sha256.Size]byte {
	parts := make([][]byte, 0, len(resources))
	for _, r := range resources {
		parts = append(parts, append([]byte(r.GetTypeUrl()+"\x00"), r.GetValue()...))
	}
	sort.Slice(parts, func(i, j int) bool { return string(parts[i]) < string(parts[j]) })
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// sleepCtx waits d, or until ctx is done: it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
