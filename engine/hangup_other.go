//go:build !unix

package engine

// WatchHangup is the unix one's stand-in: a hangup is noticed at the
// command's end only.
func (c *Conn) WatchHangup() (hungUp <-chan struct{}, stop func()) { return nil, func() {} }
