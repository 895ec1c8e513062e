// Package acl is Redis 7's access control lists, pure: users, their rules
// (the ACL SETUSER language: on, off, >password, #hash, nopass, +command,
// -@category, ~pattern, %R~pattern, &channel, (selectors), reset, ...),
// the check of one command's arguments against a user, the ACL file
// format, and the ACL LOG. It reads no clock (times are parameters), does
// no I/O and knows no connection: package server owns the users in force,
// binds them to connections and turns this package's errors into Redis's
// texts.
//
// Rules mean what they mean in Redis 7.2 (src/acl.c): the same commands
// allowed, the same keys and channels, the same ACL LIST and ACL GETUSER
// descriptions, so that a file written by Redis loads here and the reverse,
// for the commands both serve. The commands a rule can name are the
// server's (Commands), each with its Redis ACL categories.
package acl
