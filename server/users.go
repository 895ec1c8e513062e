package server

import (
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/internal/atomicfile"
)

// users are the ACL users in force (package acl) and what binds them to
// connections. Each connection holds its user (client.user) and a word of
// what dispatch must check (client.access); a user changed, deleted or
// reloaded is put in place under mu, and every connection of it rebound
// or closed, so that a connection's next command meets its user's rules
// as they now are. AUTH binds under mu too, so that a user changed while
// a connection authenticates as it cannot be missed.
type users struct {
	mu  sync.Mutex
	set *acl.Users // replaced whole by ACL LOAD; its users are immutable
	// cmds are the commands rules name; log is the ACL LOG.
	cmds *acl.Commands
	log  *acl.Log
	// file is --aclfile: "" refuses ACL LOAD and SAVE. requirePass is the
	// default user's password when the file has no line for it.
	file        string
	requirePass string
}

// The bits of client.access: what dispatch must check before a command.
// Zero for an authenticated connection whose user is unrestricted (the
// default user without ACLs): one branch in dispatch, nothing more.
const (
	// accessUnauthed: the connection has not authenticated; only
	// commands that need no authentication run (NOAUTH).
	accessUnauthed uint32 = 1 << iota
	// accessLimited: the user is not allowed everything; each command is
	// checked against its rules (NOPERM).
	accessLimited
)

func newUsers(cmds *acl.Commands, requirePass, file string) *users {
	return &users{set: acl.NewUsers(acl.DefaultUser(cmds, requirePass)), cmds: cmds, log: acl.NewLog(0),
		file: file, requirePass: requirePass}
}

// defaultUser returns the default user in force.
func (us *users) defaultUser() *acl.User {
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.set.Get("default")
}

// defaultOpen reports whether a new connection is authenticated from the
// start: the default user is on and takes any password (nopass).
func (us *users) defaultOpen() bool {
	d := us.defaultUser()
	return d.Enabled() && d.NoPass()
}

// bind makes u the client's user, and sets whether its commands are
// checked; users.mu is held, or the client is not yet known to others.
func (c *client) bind(u *acl.User) {
	c.user.Store(u)
	if u.Unrestricted() {
		c.access.And(^accessLimited)
	} else {
		c.access.Or(accessLimited)
	}
}

// setAuthed records whether the connection has authenticated. Only the
// connection's own goroutine calls it.
func (c *client) setAuthed(authed bool) {
	c.session.authed = authed
	c.conn.SetAuthenticated(authed) // the reader's limits: Redis 7's before AUTH
	if authed {
		c.access.And(^accessUnauthed)
	} else {
		c.access.Or(accessUnauthed)
	}
}

// all returns every user, in name order.
func (us *users) all() []*acl.User {
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.set.All()
}

// exists reports whether there is a user named name.
func (us *users) exists(name string) bool {
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.set.Get(name) != nil
}

// authedSeen reports whether the client has authenticated, from any
// goroutine.
func (c *client) authedSeen() bool { return c.access.Load()&accessUnauthed == 0 }

// userName is the name of the client's user: CLIENT LIST's user=.
func (c *client) userName() string { return c.user.Load().Name() }

// LoadACLFile loads --aclfile, once, before the server serves: the users
// it defines replace the default user alone (without a default user's
// line, the default user keeps --requirepass). An error says what is wrong
// with the file, each line's error, and the start should stop, as Redis
// aborts its start.
func (s *Server) LoadACLFile() error {
	if s.users.file == "" {
		return nil
	}
	set, e := s.readACLFile()
	if !e.none() {
		return errors.New(strings.TrimPrefix(e.text, "ERR "))
	}
	s.users.mu.Lock()
	s.users.set = set
	s.users.mu.Unlock()
	return nil
}

// readACLFile reads and parses --aclfile; the error is ACL LOAD's reply.
func (s *Server) readACLFile() (*acl.Users, replyError) {
	data, err := os.ReadFile(s.users.file)
	if err != nil {
		return nil, errACLFileOpen(s.users.file, err)
	}
	set, errs := acl.Load(s.users.cmds, data, acl.DefaultUser(s.users.cmds, s.users.requirePass))
	if len(errs) > 0 {
		return nil, errACLFile(s.users.file, errs)
	}
	return set, replyError{}
}

// saveACLFile writes the users in force to --aclfile, whole or not at all.
func (s *Server) saveACLFile() error {
	s.users.mu.Lock()
	data := s.users.set.Save()
	s.users.mu.Unlock()
	return atomicfile.Write(s.users.file, data)
}

// authenticate opens user with pass for c at now; cmdName is the command
// as sent (AUTH, HELLO), which ACL LOG records a failure under. It returns
// the error to answer, or none once c is authenticated as the user. A
// right password is answered at once and charges nothing, whatever the
// address's failures; a wrong one is charged to them, and answered late
// past their budget (authLimiter).
func (c *client) authenticate(cmdName, user, pass []byte, now time.Time) replyError {
	us := c.srv.users
	us.mu.Lock()
	if u := us.set.Get(string(user)); u != nil && u.CheckPassword(pass) {
		c.bind(u)
		us.mu.Unlock()
		c.setAuthed(true)
		return replyError{}
	}
	us.mu.Unlock()
	c.logDenial(acl.DeniedAuth, string(cmdName), string(user), now)
	if d := c.srv.authFails.fail(c.ident.addr, gcra.InstantOf(now)); d > 0 {
		c.answerLate(d)
	}
	return errWrongPass
}

// logDenial records a refusal of c's in the ACL LOG: of the object (a
// command's name, a key, a channel, AUTH) to username.
func (c *client) logDenial(reason acl.Reason, object, username string, now time.Time) {
	ctx := acl.TopLevel
	if c.tx.multi != nil || c.inExec() {
		ctx = acl.InMulti
	}
	c.srv.users.log.Add(reason, ctx, object, username, c.info(now), now)
}

// setUser applies rules to the user named name, creating it (off, allowed
// nothing) if there is none, all or nothing, then rebinds its connections
// (userChanged). self is the client that asked, which is closed once its
// reply is sent if the change ends its connection.
func (s *Server) setUser(self *client, name string, rules []string) error {
	us := s.users
	us.mu.Lock()
	defer us.mu.Unlock()
	old := us.set.Get(name)
	base := old
	if base == nil {
		base = acl.NewUser(us.cmds, name)
	}
	u, err := base.With(rules)
	if err != nil {
		return err
	}
	us.set.Set(u)
	if old != nil {
		s.userChanged(self, name, u)
	}
	return nil
}

// deleteUsers deletes the users named, and closes their connections; it
// returns how many there were. The default user cannot be deleted: the
// caller refuses to ask.
func (s *Server) deleteUsers(self *client, names []string) int {
	us := s.users
	us.mu.Lock()
	defer us.mu.Unlock()
	n := 0
	for _, name := range names {
		if us.set.Delete(name) {
			n++
			s.userChanged(self, name, nil)
		}
	}
	return n
}

// replaceUsers puts set in force (ACL LOAD): the connections of a user
// the set lacks, or has off, are closed, the others rebound to their user
// as the set has it.
func (s *Server) replaceUsers(self *client, set *acl.Users) {
	us := s.users
	us.mu.Lock()
	defer us.mu.Unlock()
	us.set = set
	seen := map[string]bool{}
	for _, c := range s.connectedClients() {
		if name := c.userName(); !seen[name] {
			seen[name] = true
			s.userChanged(self, name, set.Get(name))
		}
	}
}

// userChanged rebinds the connections authenticated as name to u, its
// rules as they now are, under users.mu. A connection whose user is gone
// (u nil) or off is closed, as Redis closes a deleted user's (Redis keeps
// a disabled user's connections: redcell closes them, so that turning off
// a leaked user ends what it is doing); so is a subscriber whose
// subscriptions u no longer allows, as Redis does. self, the client that
// made the change, gets its reply first.
func (s *Server) userChanged(self *client, name string, u *acl.User) {
	for _, c := range s.connectedClients() {
		if c.userName() != name {
			continue
		}
		if !c.authedSeen() && u != nil {
			c.bind(u) // not authenticated: it runs nothing its user's rules govern
			continue
		}
		if u != nil && u.Enabled() && c.subscriptionsAllowed(u) {
			c.bind(u)
			continue
		}
		if c == self {
			_ = self.conn.Close()
			continue
		}
		c.kill()
	}
}

// subscriptionsAllowed reports whether u allows every channel and pattern
// c is subscribed to.
func (c *client) subscriptionsAllowed(u *acl.User) bool {
	if c.subscriptions() == 0 {
		return true
	}
	ps := &c.srv.pubsub
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for kind := range subKinds {
		for name := range c.sub.names[kind] {
			if !u.MaySubscribe(name, kind == subPattern) {
				return false
			}
		}
	}
	return true
}

// UserNames returns the names of the users in force, in name order.
func (s *Server) UserNames() []string {
	us := s.users
	us.mu.Lock()
	defer us.mu.Unlock()
	var out []string
	for _, u := range us.set.All() {
		out = append(out, u.Name())
	}
	return out
}

// DefaultUserOpen reports whether a new connection needs no password: the
// default user is on and nopass (protected mode's question).
func (s *Server) DefaultUserOpen() bool { return s.users.defaultOpen() }
