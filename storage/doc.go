// Package storage is redcell's keyspace and what keeps it: rate-limit state
// by key in memory, and its copy on disk.
//
//   - The keyspace (Store): keys spread over lock-striped shards so that all
//     cores serve decisions at once, each shard a table of its own outside
//     the Go heap once large. A key is a TAT (gcra.Instant), which is also
//     when it expires, or a boxed kind's state (a window.Spec's), with its
//     expiry. Every decision (Throttle, Reserve, Window) runs under its
//     key's shard lock. Commands reach it through Keyspace.
//   - Expiry: lazily on access, and actively through ExpireSome (RunExpiry).
//   - The memory limit, as Redis's maxmemory (Config.MaxMemory,
//     EvictionPolicy), watched off the command path (RunMemoryWatch).
//   - Tidying: the garbage keys moved or gone leave in a table's arenas is
//     compacted once the table is at rest, or at once over the limit
//     (Tidy, RunTidy).
//   - Transactions' locks: Lock returns a Txn holding the shards of a
//     transaction's keys, itself a Keyspace, so that MULTI/EXEC runs with
//     nothing of anyone else's in between.
//   - Cluster slots: a store sharded by slot (Config.BySlot) counts, finds,
//     freezes and drops a slot's keys without scanning the rest.
//   - Change logs: which keys changed, recorded per shard for the persister
//     (TakeShardChanges) and, apart, for replication (SetFeed, TakeFeed),
//     which also copies every key (CopyShard) and stores what a master sent
//     (Apply).
//   - Persistence: a Flusher writes the changes to a Backend every interval,
//     on demand or, in durable mode, before replies are sent; PebbleBackend
//     (OpenPebble) keeps them in Pebble, out of the way of a full or failing
//     disk, and loads them back at start, correcting for a wall clock found
//     behind the last save.
//
// The Store never reads a clock: every method that needs the time takes now,
// and the Flusher's clock is FlusherOptions.Now.
package storage
