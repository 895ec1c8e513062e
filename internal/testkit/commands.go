package testkit

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/resp"
)

// ErrNotMultibulk is input a CommandReader refuses: anything but a
// multibulk command as a node writes one (resp.AppendCommand), such as an
// inline command or an empty one.
var ErrNotMultibulk = errors.New("testkit: not a multibulk command")

// CommandReader reads the commands a node sends, for a test that plays the
// node's peer or master: resp.Reader, the server's own reader, under its
// default limits, taking multibulk commands only. It is not safe for
// concurrent use.
type CommandReader struct {
	rd *resp.Reader
}

// NewCommandReader reads commands from r. It reads ahead: what follows a
// command in r is the CommandReader's from then on.
func NewCommandReader(r io.Reader) *CommandReader {
	return &CommandReader{rd: resp.NewReader(r, resp.Limits{})}
}

// Next returns the next command's arguments. A refusal of the resp.Reader,
// or input that is not a multibulk command, is an error (ErrNotMultibulk),
// and so is the end of r (io.EOF).
func (c *CommandReader) Next() ([]string, error) {
	for {
		used := len(c.rd.Used())
		args, err := c.rd.Next(true)
		if err != nil {
			return nil, err
		}
		// What Next used is the command's bytes, or an empty command it
		// skipped: a multibulk command is its AppendCommand form, byte
		// for byte.
		raw := c.rd.Used()[used:]
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = string(a)
		}
		if len(raw) > 0 && (args == nil || string(raw) != Command(out...)) {
			return nil, fmt.Errorf("%w: %q", ErrNotMultibulk, raw)
		}
		if args != nil {
			return out, nil
		}
		if err := c.rd.Fill(); err != nil {
			return nil, err
		}
	}
}

// Peer is a fake node on 127.0.0.1 that speaks just enough of a protocol
// for a test: it reads each connection's commands with a CommandReader,
// sends each on Got as it is read, then writes what answer returns for it;
// answer returning "" closes the connection instead (a process killed: the
// node reads EOF at once). Input it cannot read closes the connection too.
// It stops accepting when the test ends.
type Peer struct {
	Addr string // 127.0.0.1:Port
	Port int
	// Got has every command read, in the order read on each connection;
	// it holds 65536 before reading blocks.
	Got chan []string
}

// StartPeer starts a Peer that answers each command with answer(args).
// answer runs on the connection's goroutine.
func StartPeer(t testing.TB, answer func(args []string) string) *Peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Peer{Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port, Got: make(chan []string, 1<<16)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(conn, answer)
		}
	}()
	return p
}

func (p *Peer) serve(conn net.Conn, answer func(args []string) string) {
	defer conn.Close()
	rd := NewCommandReader(conn)
	for {
		args, err := rd.Next()
		if err != nil {
			return
		}
		p.Got <- args
		reply := answer(args)
		if reply == "" {
			return
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

// Drain returns the commands read so far and not yet taken from Got.
func (p *Peer) Drain() [][]string {
	var out [][]string
	for len(p.Got) > 0 {
		out = append(out, <-p.Got)
	}
	return out
}
