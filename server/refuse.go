package server

import (
	"net"
	"net/netip"
)

// peer is what localPeer asks of a connection: where it comes from.
type peer interface {
	RemoteAddr() string
	NetConn() net.Conn
}

// localPeer reports whether cn comes from this host, as Redis 7's
// protected mode asks (connIsLocal): from a Unix socket, or an IP loopback
// address (127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into IPv6, which is how
// a dual-stack listener sees IPv4 loopback).
func localPeer(cn peer) bool {
	if nc := cn.NetConn(); nc != nil {
		if _, unix := nc.RemoteAddr().(*net.UnixAddr); unix {
			return true
		}
	}
	ap, err := netip.ParseAddrPort(cn.RemoteAddr())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
