package acl

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Users is a set of users by name, the default user always among them. It
// is not safe for concurrent use: the server guards the set in force.
type Users struct {
	byName map[string]*User
}

// NewUsers is a set holding only def, the default user.
func NewUsers(def *User) *Users {
	return &Users{byName: map[string]*User{def.name: def}}
}

// Get returns the user named name, or nil.
func (us *Users) Get(name string) *User { return us.byName[name] }

// Set adds u, or replaces the user of its name.
func (us *Users) Set(u *User) { us.byName[u.name] = u }

// Delete removes the user named name and reports whether there was one.
// The default user cannot be removed: the server refuses to ask.
func (us *Users) Delete(name string) bool {
	_, ok := us.byName[name]
	delete(us.byName, name)
	return ok
}

// All returns the users in name order, as ACL LIST and ACL USERS list
// them.
func (us *Users) All() []*User {
	out := make([]*User, 0, len(us.byName))
	for _, u := range us.byName {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *User) int { return strings.Compare(a.name, b.name) })
	return out
}

// Len is how many users there are.
func (us *Users) Len() int { return len(us.byName) }

// Save is the ACL file of the users: a line "user <name> <rules>" each,
// in name order, as Redis's ACL SAVE writes it. Passwords are written as
// their digests (#...).
func (us *Users) Save() []byte {
	var b strings.Builder
	for _, u := range us.All() {
		b.WriteString("user " + u.name + " " + u.Describe() + "\n")
	}
	return []byte(b.String())
}

// Errors of the ACL file beyond a rule's, each reported with its line
// (LineError).
var (
	// ErrNoUserKeyword: a line that is not "user <name> ...".
	ErrNoUserKeyword = errors.New("acl: a line must start with the user keyword and the user name")
	// ErrDuplicateUser: a user defined on two lines.
	ErrDuplicateUser = errors.New("acl: a user defined twice")
)

// LineError is what is wrong with one line of an ACL file: the user it
// defines (Name), the rule (Op) for a rule's error, and the error, one of
// this package's.
type LineError struct {
	Line     int
	Name, Op string
	Err      error
}

func (e LineError) Error() string {
	s := "acl: line " + strconv.Itoa(e.Line) + ": "
	if e.Op != "" {
		s += "rule '" + e.Op + "': "
	}
	return s + e.Err.Error()
}

func (e LineError) Unwrap() error { return e.Err }

// Load reads an ACL file, as Redis's ACLLoadFromFile: a line "user <name>
// <rule> ..." per user, rules separated by single spaces; blank lines are
// skipped; anything else, a comment included, is an error (the file is
// rewritten by ACL SAVE, which would lose comments). Each user starts as
// NewUser makes it. Without a line for the default user, def is the
// default user. Every line is read, and every error reported: with any,
// the set is nil, and the users in force should stay as they are. After a
// rule's first error on a line, only unknown commands are reported there
// (the other errors may follow from the first), as Redis does.
func Load(cmds *Commands, data []byte, def *User) (*Users, []LineError) {
	us := &Users{byName: map[string]*User{}}
	var errs []LineError
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			errs = append(errs, LineError{Line: n, Err: ErrNoUserKeyword})
			continue
		}
		name := argv[1]
		if hasSpace(name) {
			errs = append(errs, LineError{Line: n, Name: name, Err: ErrBadUsername})
			continue
		}
		if us.byName[name] != nil {
			errs = append(errs, LineError{Line: n, Name: name, Err: ErrDuplicateUser})
			continue
		}
		u := NewUser(cmds, name)
		us.byName[name] = u
		ops, err := MergeSelectors(argv[2:])
		if err != nil {
			errs = append(errs, LineError{Line: n, Name: name, Err: ErrUnmatchedParen})
			continue
		}
		failed := false
		for _, op := range ops {
			op = strings.Trim(op, "\t\r\n")
			err := u.apply(op)
			switch {
			case err == nil:
			case errors.Is(err, ErrUnknownCommand):
				errs = append(errs, LineError{Line: n, Name: name, Op: op, Err: err})
			case !failed:
				failed = true
				errs = append(errs, LineError{Line: n, Name: name, Op: op, Err: err})
			}
		}
		u.unrestricted = u.computeUnrestricted()
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if us.byName["default"] == nil {
		us.byName["default"] = def
	}
	return us, nil
}
