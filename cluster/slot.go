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
	// The CRC and the look for a '{' in one pass: a key without one (most
	// of them) is read once.
	var crc uint16
	i := 0
	for ; i+1 < len(key); i += 2 {
		a, b := key[i], key[i+1]
		if a == '{' || b == '{' {
			return taggedSlot(key)
		}
		x := crc ^ (uint16(a)<<8 | uint16(b))
		crc = crcTable2[x>>8] ^ crcTable[byte(x)]
	}
	if i < len(key) {
		// A '{' last has no '}' after it: the whole key is hashed.
		crc = crc<<8 ^ crcTable[byte(crc>>8)^key[i]]
	}
	return int(crc & (Slots - 1))
}

// taggedSlot is Slot of a key with a '{': its hash tag's slot if it has
// one.
func taggedSlot(key []byte) int {
	if s := bytes.IndexByte(key, '{'); s >= 0 {
		if e := bytes.IndexByte(key[s+1:], '}'); e > 0 {
			return int(crc16(key[s+1:s+1+e]) & (Slots - 1))
		}
	}
	return int(crc16(key) & (Slots - 1))
}

// crc16 is CRC16-XMODEM (polynomial 0x1021, init 0, no reflection), the
// checksum Redis Cluster hashes keys with, two bytes a step: a decision in
// cluster mode computes it once, and a byte a step cost it twice the
// instructions.
func crc16(b []byte) uint16 {
	var crc uint16
	i := 0
	for ; i+1 < len(b); i += 2 {
		x := crc ^ (uint16(b[i])<<8 | uint16(b[i+1]))
		crc = crcTable2[x>>8] ^ crcTable[byte(x)]
	}
	if i < len(b) {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^b[i]]
	}
	return crc
}

// crcTable[i] is the CRC of the register i<<8 after one byte of zeros;
// crcTable2[i] after two.
var crcTable, crcTable2 = func() (t, t2 [256]uint16) {
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
	for i := range t2 {
		t2[i] = t[i]<<8 ^ t[t[i]>>8]
	}
	return t, t2
}()
