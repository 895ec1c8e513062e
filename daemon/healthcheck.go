package daemon

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/config"
	"github.com/redcell/redcell/resp"
)

// HealthCheck sends PING (after AUTH when a password is set) to the server
// cfg describes and returns nil if it answers PONG within timeout. A server
// bound to every address is reached on the loopback.
func HealthCheck(cfg config.Config, timeout time.Duration) error {
	host := cfg.Bind
	switch host {
	case "", "0.0.0.0", "*":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	rd := bufio.NewReader(conn)
	send := func(args ...string) (string, error) {
		if _, err := conn.Write(resp.AppendCommand(nil, args...)); err != nil {
			return "", err
		}
		line, err := rd.ReadString('\n')
		return strings.TrimRight(line, "\r\n"), err
	}
	if cfg.RequirePass != "" {
		reply, err := send("AUTH", cfg.RequirePass)
		if err != nil {
			return err
		}
		if reply != "+OK" {
			return fmt.Errorf("%s: AUTH answered %q", addr, reply)
		}
	}
	reply, err := send("PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("%s: PING answered %q", addr, reply)
	}
	return nil
}
