package server

// prefetchAhead readies, while the command at hand runs, the memory the next
// two commands of the pipeline will read: the entry of the next one's key,
// whose index slot was prefetched while the command before ran, and the
// index slot of the one after (storage.Store.PrefetchEntry, PrefetchIndex).
// A decision on a key out of many then finds its state in cache instead of
// waiting on memory twice.
// client.Run calls it while the pipeline runs commands that look their key up
// (command.prefetchKey): a pipeline repeats one command, and a key peeked at
// that is not one is only a wasted hint.
func (s *Server) prefetchAhead(next, after []byte) {
	if next != nil {
		s.store.PrefetchEntry(next, -1)
	}
	if after != nil {
		s.store.PrefetchIndex(after, -1)
	}
}
