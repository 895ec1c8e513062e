// Package cluster is what makes redcell nodes one Redis Cluster: the slot a
// key hashes to, and the topology an operator pushes to every node (kvrocks's
// CLUSTERX SETNODES format: no gossip), with the replies cluster clients read
// (CLUSTER SLOTS, SHARDS, NODES, INFO) rendered from it. It holds no
// connection and no key: package server asks it who owns a slot.
package cluster

import "bytes"

// Slots is the number of hash slots, as Redis Cluster's.
const Slots = 16384

// Slot returns the hash slot of key, as Redis Cluster computes it: the
// CRC16-XMODEM of the key, or of its hash tag (the bytes between the first
// '{' and the first '}' after it, when that is not empty), mod 16384.
func Slot(key []byte) int {
	if s := bytes.IndexByte(key, '{'); s >= 0 {
		if e := bytes.IndexByte(key[s+1:], '}'); e > 0 {
			return int(crc16(key[s+1:s+1+e]) & (Slots - 1))
		}
	}
	return int(crc16(key) & (Slots - 1))
}

// crc16 is CRC16-XMODEM (polynomial 0x1021, init 0, no reflection), the
// checksum Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
