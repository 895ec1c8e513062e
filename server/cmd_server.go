package server

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// TIME
func cmdTime(c *client, _ [][]byte, now time.Time) {
	c.writeArray(2)
	c.writeBulkString(strconv.FormatInt(now.Unix(), 10))
	c.writeBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

// INFO [section ...]
func cmdInfo(c *client, args [][]byte, now time.Time) {
	sections := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		sections = append(sections, strings.ToLower(string(a)))
	}
	c.writeVerbatim(c.srv.info(sections, now))
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]
//
// On success the connection closes without a reply, as in Redis.
func cmdShutdown(c *client, args [][]byte, _ time.Time) {
	save := true
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "nosave"):
			save = false
		case equalFold(a, "save"), equalFold(a, "now"), equalFold(a, "force"), equalFold(a, "abort"):
		default:
			c.writeError(errSyntax)
			return
		}
	}
	if c.srv.cfg.Shutdown == nil {
		c.writeError(errShutdownSave)
		return
	}
	if err := c.srv.cfg.Shutdown(save); err != nil {
		c.writeError(errShutdownSave)
		return
	}
	c.closing = true
	c.conn.Close()
}

// SAVE
//
// Writes every change and syncs it before replying.
func cmdSave(c *client, _ [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if err := p.Flush(true); err != nil {
		c.srv.logError("SAVE failed", err)
		c.writeError("ERR " + err.Error())
		return
	}
	c.writeOK()
}

// BGSAVE [SCHEDULE]
func cmdBgsave(c *client, args [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeError(errNoPersistence)
		return
	}
	if len(args) == 2 && !equalFold(args[1], "schedule") {
		c.writeError(errSyntax)
		return
	}
	if !p.BackgroundSave(func(err error) { c.srv.logError("BGSAVE failed", err) }) {
		if len(args) == 2 {
			c.writeSimple("Background saving scheduled")
			return
		}
		c.writeError("ERR Background save already in progress")
		return
	}
	c.writeSimple("Background saving started")
}

// LASTSAVE
//
// The Unix time of the last successful flush (the start time before one).
func cmdLastsave(c *client, _ [][]byte, _ time.Time) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.writeInt(c.srv.started.Unix())
		return
	}
	c.writeInt(p.Stats().LastSave.Unix())
}

// CONFIG GET parameter [parameter ...] | CONFIG SET ... | CONFIG RESETSTAT
//
// GET reports the settings monitoring tools and clients read; SET is refused
// because redcell is configured by flags.
func cmdConfig(c *client, args [][]byte, _ time.Time) {
	sub := args[1]
	switch {
	case equalFold(sub, "get") && len(args) >= 3:
		params := c.srv.configParams()
		names := make([]string, 0, len(params))
		for name := range params {
			for _, pat := range args[2:] {
				if globMatch([]byte(strings.ToLower(string(pat))), name) {
					names = append(names, name)
					break
				}
			}
		}
		sort.Strings(names)
		c.writeMap(len(names))
		for _, name := range names {
			c.writeBulkString(name)
			c.writeBulkString(params[name])
		}
	case equalFold(sub, "set") && len(args) >= 4:
		c.writeError("ERR CONFIG SET is not supported by redcell: settings are command-line flags")
	case equalFold(sub, "resetstat") && len(args) == 2:
		c.writeOK()
	case equalFold(sub, "get"), equalFold(sub, "set"), equalFold(sub, "resetstat"):
		c.writeError(errWrongArgs("config|" + strings.ToLower(string(sub))))
	default:
		c.writeError(errUnknownSubcommand(sub, "CONFIG"))
	}
}

// saveParam and appendfsyncParam describe redcell's flushing in the words
// of the Redis settings closest to it.
func (s *Server) saveParam() string {
	if s.cfg.Persistence == nil {
		return ""
	}
	return "1 1"
}

func (s *Server) appendfsyncParam() string {
	switch {
	case s.cfg.Persistence == nil:
		return "no"
	case s.cfg.DurableWrites:
		return "always"
	default:
		return "everysec"
	}
}

// configParams are the values CONFIG GET reports, by Redis's names.
func (s *Server) configParams() map[string]string {
	return map[string]string{
		"bind":             s.cfg.Bind,
		"port":             strconv.Itoa(s.cfg.Port),
		"dir":              s.cfg.Dir,
		"databases":        "1",
		"maxmemory":        "0",
		"maxmemory-policy": "noeviction",
		"maxclients":       "10000",
		"timeout":          "0",
		"save":             "",
		"appendonly":       "no",
		"requirepass":      "",
		"protected-mode":   "no",
		"cluster-enabled":  "no",
	}
}
