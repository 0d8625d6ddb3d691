// Package slot computes Redis Cluster hash slots, so that a lock's keys can be
// checked to share one slot before any command is built (the rueidis cluster
// client panics on a cross-slot command instead of returning an error).
package slot

import "strings"

// Count is the number of hash slots in a Redis Cluster.
const Count = 16384

// Of returns the cluster hash slot of key: CRC16 (XMODEM) of the key's hash
// tag modulo 16384. The hash tag is the text between the first '{' and the
// first '}' after it, when that text is non-empty; otherwise the whole key.
func Of(key string) uint16 {
	return crc16(Tag(key)) % Count
}

// Tag returns the part of key that Redis hashes: the non-empty text between
// the first '{' and the next '}', or the whole key when there is none.
func Tag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 { // no closing brace, or "{}": the whole key is hashed
		return key
	}
	return key[open+1 : open+1+end]
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster specifies for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
