package acl

import "errors"

// Errors of a rule (User.Apply) and of the ACL file (Load). Package server
// words each as Redis does (ACL SETUSER's "Error in ACL SETUSER modifier
// '...': ..."); the reason each stands for is Redis's errno for it.
var (
	// ErrUnknownCommand: +cmd, -cmd, +@category or -@category names none
	// the server has (ENOENT).
	ErrUnknownCommand = errors.New("acl: unknown command or category")
	// ErrSyntax: a rule that means nothing, or a pattern with a space or
	// a NUL (EINVAL).
	ErrSyntax = errors.New("acl: syntax error")
	// ErrPatternAfterAllKeys: ~pattern after allkeys or ~* (EEXIST).
	ErrPatternAfterAllKeys = errors.New("acl: a key pattern after allkeys")
	// ErrPatternAfterAllChannels: &pattern after allchannels or &* (EISDIR).
	ErrPatternAfterAllChannels = errors.New("acl: a channel pattern after allchannels")
	// ErrNoSuchPassword: <password or !hash of a password the user does
	// not have (ENODEV).
	ErrNoSuchPassword = errors.New("acl: no such password")
	// ErrBadHash: #hash or !hash that is not 64 lower-case hex digits
	// (EBADMSG).
	ErrBadHash = errors.New("acl: a password hash must be 64 lower-case hex digits")
	// ErrFirstArgOfSubcommand: +container|sub|arg (ECHILD).
	ErrFirstArgOfSubcommand = errors.New("acl: a first argument of a subcommand")
	// ErrUnmatchedParen: a selector's '(' without its ')'.
	ErrUnmatchedParen = errors.New("acl: unmatched parenthesis in a selector")
	// ErrBadUsername: a user name with a space or a NUL.
	ErrBadUsername = errors.New("acl: a user name with a space or a NUL")
)
